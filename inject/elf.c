/*
 * elf.c: the address of a symbol in an object loaded in the target, from
 * the object's .dynsym (exported symbols survive stripping).  The file read
 * is the target's own copy: /proc/PID/map_files/<range> (the very file
 * mapped, even in another mount namespace, even deleted), else the path
 * under /proc/PID/root.  Bounds are checked on every read.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"

static int
open_object(pid_t pid, const pe_obj_t *o)
{
    char path[700];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
             (unsigned long long)o->start, (unsigned long long)o->end);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
        return fd;
    snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, o->path);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* in [0, size): n bytes at off */
static int
fits(size_t size, uint64_t off, uint64_t n)
{
    return off <= size && n <= size - off;
}

uint64_t
pe_elf_sym(pid_t pid, const pe_obj_t *o, const char *name)
{
    struct stat st;
    const unsigned char *m;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    uint64_t found = 0, min_vaddr = UINT64_MAX;
    size_t size;
    int fd = open_object(pid, o);

    if (fd < 0)
        return 0;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return 0;
    }
    size = (size_t)st.st_size;
    m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 0;
    eh = (const Elf64_Ehdr *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        !fits(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
        !fits(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        goto out;
    for (int i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(m + eh->e_phoff) + i;
        if (ph->p_type == PT_LOAD && ph->p_vaddr < min_vaddr)
            min_vaddr = ph->p_vaddr;
    }
    if (min_vaddr == UINT64_MAX)
        goto out;
    sh = (const Elf64_Shdr *)(m + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !found; i++) {
        const Elf64_Shdr *sym = &sh[i], *str;
        if (sym->sh_type != SHT_DYNSYM || sym->sh_link >= eh->e_shnum ||
            sym->sh_entsize != sizeof(Elf64_Sym) || !fits(size, sym->sh_offset, sym->sh_size))
            continue;
        str = &sh[sym->sh_link];
        if (!fits(size, str->sh_offset, str->sh_size))
            continue;
        for (uint64_t k = 0; k < sym->sh_size / sizeof(Elf64_Sym); k++) {
            const Elf64_Sym *s = (const Elf64_Sym *)(m + sym->sh_offset) + k;
            const char *nm = (const char *)m + str->sh_offset + s->st_name;
            if (s->st_shndx == SHN_UNDEF || s->st_name >= str->sh_size ||
                ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
                strnlen(nm, str->sh_size - s->st_name) == str->sh_size - s->st_name ||
                strcmp(nm, name) != 0)
                continue;
            /* ET_DYN: the first mapping is at the lowest PT_LOAD's page */
            found = (eh->e_type == ET_DYN ? o->base - (min_vaddr & ~0xfffULL) : 0) + s->st_value;
            break;
        }
    }
out:
    munmap((void *)m, size);
    return found;
}
