/*
 * demangle.h: readable names for profiles.  Turns a linker symbol into what a
 * person reads (C++ through the host's own __cxa_demangle, Rust legacy and v0
 * through our decoders) and a readable name into the short form pprof shows.
 * Both write only into the caller's buffer and allocate nothing of their own
 * (the C++ path frees what __cxa_demangle returns).
 *
 * Signal-safe: no.  Both run on the server thread only.
 */
#ifndef PE_SYMBOLS_DEMANGLE_H
#define PE_SYMBOLS_DEMANGLE_H

#include <stddef.h>

/* Inputs longer than this are not demangled (the caller keeps the raw name):
   __cxa_demangle can be slow and deeply recursive on hostile input. */
#define PE_DEM_MAX_INPUT 4096

/* Readable form of a symbol name: C++ Itanium (GCC's and Clang's) via the host process's own
   __cxa_demangle (found with dlsym(RTLD_DEFAULT, "__cxa_demangle") at first use; present whenever
   libstdc++ or libc++abi is loaded; re-looked-up if it was absent before, since a C++ runtime may
   be dlopen'd later), Rust legacy (_ZN...17h<16 hex>E: `a::b::c` without the hash, $LT$ $GT$ $u20$
   $RF$ $BP$ $C$ $SP$ $u7b$ .. decoded and `..` shown as `::`) and Rust v0 (_R...: our own decoder
   of the v0 grammar: paths, generic args, types incl. references, pointers, arrays, slices, tuples,
   fn types, dyn traits, consts, backrefs, punycode identifiers; crate disambiguators dropped as
   rustc-demangle's alternate form `{:#}` and rustfilt do).
   GCC clone suffixes after the mangled part (`.isra.0`, `.constprop.0`, `.part.0`, `.cold`,
   `.lto_priv.0`, combinations) are demangled without them and shown as notes the way c++filt does:
   ` [clone .isra.0]`; a Rust `.llvm.<hex>` suffix is dropped as rustc-demangle drops it.  Glibc
   version suffixes (`@@GLIBC_2.34`, `@GLIBC_2.2.5`) are kept as they are.  C++ output also spells
   out the standard abbreviations (std::string, std::ostream, ...) as c++filt does.
   Writes into buf[len] (NUL-terminated, truncated on a UTF-8 boundary), returns buf, or NULL when
   `sym` is not a mangled name, is longer than PE_DEM_MAX_INPUT, or cannot be demangled (the caller
   keeps the raw name); NULL also when buf is NULL or len is 0.  Never crashes on any input:
   __cxa_demangle needs ~512 bytes of stack per character (libstdc++ keeps input-sized arrays
   there; it refuses names over ~1000 characters itself, as c++filt does), so a thread with less
   (civetweb's workers) runs it on one stack of ours, reserved at first use, under a lock.
   Not signal-safe; called on the server thread only. */
const char *pe_dem_demangle(const char *sym, char *buf, size_t len);

/* Short form of a readable name, as pprof's display does: drops function parameter lists, template
   argument lists, trailing `const`/`volatile`/`&`/`&&`/`noexcept` qualifiers, `[abi:...]` tags
   and the return type of template functions; keeps namespaces and classes, operator names
   (operator<, operator(), operator<<=, `operator new[]`, conversion operators), lambdas as
   `{lambda()#1}`, `(anonymous namespace)::`, ` [clone .isra.0]` notes and a trailing `@GLIBC_...`.
   Rust `<alloc::vec::Vec<T> as core::ops::Drop>::drop` becomes
   `<alloc::vec::Vec as core::ops::Drop>::drop`, `core::ptr::drop_in_place::<T>` becomes
   `core::ptr::drop_in_place`.  Plain C names come back unchanged.  Writes buf (NUL-terminated,
   truncated safely; an empty string when readable is NULL), returns buf; NULL only when buf is
   NULL or len is 0.  Not signal-safe. */
const char *pe_dem_shorten(const char *readable, char *buf, size_t len);

#endif /* PE_SYMBOLS_DEMANGLE_H */
