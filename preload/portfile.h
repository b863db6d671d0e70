/*
 * portfile.h: the one writer of PROFEP_PORT_FILE, for the server (http/server.c)
 * and for a process-tree member (tree.c), which name the path each their way.
 *
 * The line is written whole into a new file of ours in the same directory
 * (mkostemp: O_EXCL, 0600, a name nobody can guess) and renamed over the final
 * path: a reader never sees a partial line, and nothing planted there is
 * written through or handed the file.  A symbolic link at the final path is
 * refused and left as it is.
 *
 * Signal-safe: no (snprintf, mkostemp).
 */
#ifndef PE_PORTFILE_H
#define PE_PORTFILE_H

/*
 * Write "host:port\n" to path (absolute, or relative to the current
 * directory).  0, -ELOOP when path is a symbolic link (nothing written), or
 * the -errno of the step that failed (the temporary file is removed).  The
 * caller says so, or not.
 */
int pe_portfile_write(const char *path, const char *host, int port);

#endif /* PE_PORTFILE_H */
