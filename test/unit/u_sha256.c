/*
 * u_sha256: http/sha256.c against known digests: FIPS 180-4's examples, a
 * million 'a's, and the lengths around a block's end where the padding takes
 * one block or two (digests from Python's hashlib); base64 against RFC 4648's
 * alphabet and padding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/sha256.h"
#include "pe_test.h"

static void
hex(const unsigned char d[32], char out[65])
{
    int i;

    for (i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void
check_hex(const void *data, size_t len, const char *want)
{
    unsigned char d[32];
    char got[65];

    pe_sha256(data, len, d);
    hex(d, got);
    CHECKF(!strcmp(got, want), "length %zu: %s, want %s", len, got, want);
}

static void
test_fips(void)
{
    static const char *const m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklm"
                                    "noijklmnopjklmnopqklmnopqrlmnop"
                                    "qrsmnopqrstnopqrstu";
    char *a = malloc(1000000);

    check_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    check_hex(m896, strlen(m896),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    if (a) {
        memset(a, 'a', 1000000);
        check_hex(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(a);
    }
}

/* Byte i is (7i + 3) mod 256: 55 bytes pad in one block, 56 need two, and so on. */
static void
test_block_edges(void)
{
    static const struct {
        size_t n;
        const char *want;
    } v[] = {
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
        {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
    };
    unsigned char buf[128];
    size_t i;

    for (i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        check_hex(buf, v[i].n, v[i].want);
}

static void
test_base64(void)
{
    char b64[45];

    /* The same digests in base64: 43 characters and one '='. */
    pe_sha256_b64("", 0, b64);
    CHECKF(!strcmp(b64, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="), "%s", b64);
    pe_sha256_b64("abc", 3, b64);
    CHECKF(!strcmp(b64, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="), "%s", b64);
    pe_sha256_b64("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, b64);
    CHECKF(!strcmp(b64, "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE="), "%s", b64);
    CHECK(strlen(b64) == 44);
}

int
main(void)
{
    test_fips();
    test_block_edges();
    test_base64();
    return pe_test_done();
}
