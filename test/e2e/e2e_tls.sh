#!/usr/bin/env bash
# e2e_tls: HTTPS with PROFEP_TLS_CERT (civetweb through http/tls/ssl_shim.c's
# forwarding libraries to OpenSSL 3).  A self-signed certificate: the line says
# https, curl -k gets the index and a heap profile, plain HTTP and a strict
# client get nothing, the program keeps its status; a missing certificate means
# one warning and no server.  Skips without openssl or without the shims.
source test/e2e/lib.sh
P=$BUILD/test
if ! command -v openssl >/dev/null || [ ! -e "${LIB%/*}/libprofendpoints-ssl.so" ]; then
    echo "SKIP: no openssl command or no libprofendpoints-ssl.so (OpenSSL 3 missing at build)"
    exit 77
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout $T/key.pem -out $T/cert.pem -days 2 \
    -subj /CN=localhost >/dev/null 2>&1
cat $T/key.pem $T/cert.pem >$T/tls.pem
PE_ENV="PROFEP_TLS_CERT=$T/tls.pem" pe_start $P/p_sleep 12 4 || exit 1
check "TLS: the line says https" grep -q "serving https://$PE_ADDR" $PE_ERR
st=$(curl -sk -o $T/idx -w '%{http_code}' --max-time 10 "https://$PE_ADDR/debug/pprof/")
check "TLS: curl -k gets the index ($st)" bash -c "[ $st = 200 ] && grep -q '<html>' $T/idx"
st=$(curl -sk -o $T/heap.pb.gz -w '%{http_code}' --max-time 10 "https://$PE_ADDR/debug/pprof/heap")
check "TLS: heap profile ($st)" bash -c "[ $st = 200 ] && gzip -t $T/heap.pb.gz"
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$PE_ADDR/debug/pprof/")
check "TLS: plain HTTP gets no answer ($st)" one_of "$st" 000 400
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "https://$PE_ADDR/debug/pprof/")
check "TLS: an unverified certificate is refused by a strict client ($st)" [ "$st" = 000 ]
check "TLS: the program's own status" program_unchanged $PE_PID 4
out=$(PROFEP_TLS_CERT=$T/nonexistent.pem PROFEP_ADDR=127.0.0.1:0 PROFEP_PORT_FILE=$T/tp \
      LD_PRELOAD=$LIB $P/p_sleep 0.3 2 2>$T/tls.err); st=$?
check "TLS: a missing certificate: one warning, no server, program unchanged" \
    bash -c "[ $st = 2 ] && [ '$out' = slept ] && [ \$(wc -l <$T/tls.err) = 1 ] && \
             grep -q PROFEP_TLS_CERT $T/tls.err && [ ! -e $T/tp ]"
pe_finish
