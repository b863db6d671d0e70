/*
 * u_pyframes.c: the CPython side of stack/pyframes.c and symbols/pynames.c.
 *
 * - Every offset of pe_py_layout_311 (or _312, built against 3.12's headers
 *   by test/e2e/e2e_python.sh when a 3.12 is at hand) against CPython's own headers
 *   (offsetof on _PyRuntimeState, PyThreadState, _PyInterpreterFrame,
 *   PyCodeObject, the str objects), built with python3.11-dev's internal
 *   headers (scripts/deps.sh python); without them the test skips (77).
 * - The 3.11 location-table decoder against CPython itself: /usr/bin/python3
 *   prints, for every code object of a few stdlib modules, co_firstlineno,
 *   co_linetable and the line of each code unit from co_positions(); each must
 *   decode to the same line.
 * - The RAW tag round trip and the pynames table: same names give the same
 *   tag, strings are cut at 255 bytes, unknown tags read as "<python>".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe_test.h"
#include "stack/pyframes.h"
#include "symbols/pynames.h"

#ifdef PE_HAVE_PY311_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030d0000
#error "these headers are not CPython 3.11's or 3.12's"
#endif

static void
check_layout(void)
{
#if PY_VERSION_HEX >= 0x030c0000
    const pe_py_layout_t *l = &pe_py_layout_312;
#else
    const pe_py_layout_t *l = &pe_py_layout_311;
#endif

#define OFF(field, type, member)                                                                   \
    CHECKF(l->field == offsetof(type, member), #field " %u != %zu", (unsigned)l->field,            \
           offsetof(type, member))
    OFF(rt_interp_head, _PyRuntimeState, interpreters.head);
    OFF(is_next, PyInterpreterState, next);
    OFF(is_threads_head, PyInterpreterState, threads.head);
    OFF(ts_next, PyThreadState, next);
    OFF(ts_cframe, PyThreadState, cframe);
    OFF(ts_native_tid, PyThreadState, native_thread_id);
    OFF(cf_current, _PyCFrame, current_frame);
    OFF(fr_code, _PyInterpreterFrame, f_code);
    OFF(fr_previous, _PyInterpreterFrame, previous);
    OFF(fr_prev_instr, _PyInterpreterFrame, prev_instr);
#if PY_VERSION_HEX >= 0x030c0000
    CHECK(l->fr_is_entry == PE_PY_NO_FIELD && l->owner_cstack == FRAME_OWNED_BY_CSTACK);
#else
    OFF(fr_is_entry, _PyInterpreterFrame, is_entry);
    CHECK(l->owner_cstack == PE_PY_NO_OWNER);
#endif
    OFF(fr_owner, _PyInterpreterFrame, owner);
    OFF(co_firstlineno, PyCodeObject, co_firstlineno);
    OFF(co_filename, PyCodeObject, co_filename);
    OFF(co_qualname, PyCodeObject, co_qualname);
    OFF(co_linetable, PyCodeObject, co_linetable);
    OFF(co_code, PyCodeObject, co_code_adaptive);
    OFF(ob_type, PyObject, ob_type);
    OFF(ob_size, PyVarObject, ob_size);
    OFF(bytes_sval, PyBytesObject, ob_sval);
    OFF(str_length, PyASCIIObject, length);
    OFF(utf8_length, PyCompactUnicodeObject, utf8_length);
    OFF(utf8, PyCompactUnicodeObject, utf8);
#undef OFF
    CHECK(l->ascii_size == sizeof(PyASCIIObject));
    CHECK(l->compact_size == sizeof(PyCompactUnicodeObject));
    /* the state bit field lies between hash and wstr (pyframes.c reads its first byte) */
    CHECK(l->str_state == offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t));
#if PY_VERSION_HEX < 0x030c0000
    CHECK((size_t)l->str_state + 4 <= offsetof(PyASCIIObject, wstr));
#endif
    /* what pyframes.c reads in one go must cover the fields it uses */
    CHECK(l->ts_native_tid + sizeof(unsigned long) <= 168);
    CHECK(l->fr_owner < 72 && l->fr_prev_instr + 8 <= 72 && l->fr_previous + 8 <= 72);
    CHECK(l->co_linetable + 8 <= 144);
    CHECK(l->hex_min <= PY_VERSION_HEX && PY_VERSION_HEX <= l->hex_max);
    /* the state bits pyframes.c decodes: compact 0x20, ascii 0x40, kind in bits 2-4 */
    {
        PyASCIIObject a;
        memset(&a, 0, sizeof(a));
        a.state.compact = 1;
        CHECK(((unsigned char *)&a)[l->str_state] == 0x20);
        memset(&a, 0, sizeof(a));
        a.state.ascii = 1;
        CHECK(((unsigned char *)&a)[l->str_state] == 0x40);
        memset(&a, 0, sizeof(a));
        a.state.kind = 4;
        CHECK(((unsigned char *)&a)[l->str_state] == 4 << 2);
    }
}
#endif

/* Each line from python: "FIRST HEX L0,L1,..." (a code unit without a line is -1). */
static const char *dump_py =
    "import json.decoder, textwrap, argparse, types\n"
    "def walk(c):\n"
    "    yield c\n"
    "    for k in c.co_consts:\n"
    "        if isinstance(k, types.CodeType):\n"
    "            yield from walk(k)\n"
    "for m in (json.decoder, textwrap, argparse):\n"
    "    src = open(m.__file__).read()\n"
    "    for c in walk(compile(src, m.__file__, 'exec')):\n"
    "        ls = [(-1 if p[0] is None else p[0]) for p in c.co_positions()]\n"
    "        print(c.co_firstlineno, c.co_linetable.hex(), ','.join(map(str, ls)))\n";

static void
check_linetable(void)
{
    char cmd[2048], *line = NULL;
    size_t cap = 0;
    int ncode = 0, nunits = 0, bad = 0;
    FILE *f;

    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c \"$PE_DUMP\"");
    setenv("PE_DUMP", dump_py, 1);
    f = popen(cmd, "r");
    if (!f) {
        CHECK(!"popen /usr/bin/python3");
        return;
    }
    while (getline(&line, &cap, f) > 0) {
        char *hex = strchr(line, ' '), *lines;
        unsigned char tab[65536];
        size_t len = 0;
        int first = atoi(line);

        if (!hex || !(lines = strchr(hex + 1, ' ')))
            continue;
        for (char *h = hex + 1; h + 1 < lines && len < sizeof(tab); h += 2) {
            unsigned v;
            sscanf(h, "%2x", &v);
            tab[len++] = (unsigned char)v;
        }
        ncode++;
        uint32_t idx = 0;
        for (char *p = lines + 1; *p && *p != '\n'; idx++) {
            int want = (int)strtol(p, &p, 10), got = pe_py_line311(tab, len, first, idx);
            if (got != want && bad++ < 5)
                fprintf(stderr, "code at line %d, unit %u: decoded %d, CPython says %d\n", first,
                        idx, got, want);
            nunits++;
            if (*p == ',')
                p++;
        }
    }
    free(line);
    CHECKF(pclose(f) == 0, "python3 failed");
    CHECKF(ncode > 100 && nunits > 10000, "%d code objects, %d units", ncode, nunits);
    CHECKF(bad == 0, "%d of %d units decoded to another line", bad, nunits);
    /* malformed tables end without a line, never read past their end */
    {
        const unsigned char junk[] = {0x00, 0x12, 0xf0};
        const unsigned char cut[] = {0xf0, 0xff}; /* long form whose varint runs off the end */
        CHECK(pe_py_line311(junk, sizeof(junk), 1, 0) == -1);
        CHECK(pe_py_line311(cut, sizeof(cut), 1, 0) == -1);
        CHECK(pe_py_line311(NULL, 0, 1, 0) == -1);
    }
}

static void
check_names(void)
{
    char longname[400];
    pe_pyname_t n;
    uint64_t a, b, c, raw;

    raw = PE_PY_RAW((uintptr_t)0x7f12345678f0, 1234);
    CHECK(PE_PY_IS_TAG(raw) && PE_PY_IS_RAW(raw) && !PE_PY_IS_NAMED(raw));
    CHECK(PE_PY_RAW_CODE(raw) == 0x7f12345678f0 && PE_PY_RAW_IDX(raw) == 1234);
    CHECK(PE_PY_RAW_IDX(PE_PY_RAW(0x1000, 0x7fffffu)) == PE_PY_IDX_MAX); /* clamped */
    CHECK(!PE_PY_IS_TAG((uintptr_t)0x7fffffffffff));

    a = pe_pynames_add("fib", "/tmp/x.py", 3, 4);
    b = pe_pynames_add("fib", "/tmp/x.py", 3, 4);
    c = pe_pynames_add("fib", "/tmp/x.py", 3, 5);
    CHECK(PE_PY_IS_NAMED(a) && a == b && a != c);
    pe_pynames_get(c, &n);
    CHECK(!strcmp(n.qualname, "fib") && !strcmp(n.filename, "/tmp/x.py") && n.firstlineno == 3 &&
          n.line == 5);
    memset(longname, 'q', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    pe_pynames_get(pe_pynames_add(longname, "f", 1, 1), &n);
    CHECK(strlen(n.qualname) == 255);
    pe_pynames_get(raw, &n); /* never named */
    CHECK(!strcmp(n.qualname, "<python>"));
    pe_pynames_get(PE_PY_NAMED_TAG(PE_PYNAMES_MAX + 5), &n);
    CHECK(!strcmp(n.qualname, "<python>"));
    /* full: new names share entry 0, old ones stay */
    for (int i = 0; pe_pynames_count() < PE_PYNAMES_MAX && i < 2 * PE_PYNAMES_MAX; i++)
        pe_pynames_add("f", "g", i, i);
    CHECK(pe_pynames_count() == PE_PYNAMES_MAX);
    CHECK(pe_pynames_add("new", "new.py", 1, 1) == PE_PY_NAMED_TAG(0));
    pe_pynames_get(c, &n);
    CHECK(!strcmp(n.qualname, "fib") && n.line == 5);
}

int
main(void)
{
#ifndef PE_HAVE_PY311_HEADERS
    printf("skip: no CPython 3.11 internal headers (scripts/deps.sh python installs "
           "python3.11-dev)\n");
    return 77;
#else
    check_layout();
    check_linetable();
    check_names();
    /* not a CPython program: nothing found, nothing captured */
    pe_py_init();
    CHECK(!pe_py_active());
    {
        uintptr_t pcs[4] = {1, 2, 3, 4};
        CHECK(pe_py_interleave(pcs, 4, 4) == 4 && pcs[3] == 4);
    }
    return pe_test_done();
#endif
}
