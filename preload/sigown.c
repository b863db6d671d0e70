/*
 * sigown.c: the shared half of holding a signal (sigown.h): installing our
 * handler, the lock, and the hand-on of a program's SIG_IGN across exec and
 * spawn.  What the program believes its disposition is stays with the owner.
 */
#include <string.h>

#include "real.h"
#include "sigown.h"

PE_SIGSAFE int
pe_sig_real_action(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!pe_real_ready)
        pe_real_init();
    return pe_real.sigaction ? pe_real.sigaction(sig, act, old) : sigaction(sig, act, old);
}

int
pe_sigown_install(pe_sigown_t *o)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = o->handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return pe_sig_real_action(o->sig, &sa, NULL);
}

void
pe_sigown_lock(pe_sigown_t *o, sigset_t *saved)
{
    pe_spin_lock_nosig(&o->lock, saved);
}

void
pe_sigown_unlock(pe_sigown_t *o, const sigset_t *saved)
{
    pe_spin_unlock_nosig(&o->lock, saved);
}

int
pe_sigown_handon_begin(pe_sigown_t *o, int foreign)
{
    sigset_t saved;

    if (!o->sig)
        return 0;
    if (foreign) {
        if (__atomic_load_n(&o->owned, __ATOMIC_ACQUIRE) && pe_sig_ignores(o->prog())) {
            struct sigaction ign;

            memset(&ign, 0, sizeof(ign));
            ign.sa_handler = SIG_IGN;
            return pe_sig_real_action(o->sig, &ign, NULL) == 0;
        }
        return 0;
    }
    pe_sigown_lock(o, &saved);
    if (o->handon_users++ == 0 && o->owned && pe_sig_ignores(o->prog())) {
        pe_sig_real_action(o->sig, o->prog(), NULL);
        o->handon_applied = 1;
    }
    pe_sigown_unlock(o, &saved);
    return 0;
}

void
pe_sigown_handon_end(pe_sigown_t *o, int foreign, int token)
{
    sigset_t saved;

    if (!o->sig)
        return;
    if (foreign) {
        if (token)
            pe_sigown_install(o);
        return;
    }
    pe_sigown_lock(o, &saved);
    if (o->handon_users > 0 && --o->handon_users == 0 && o->handon_applied) {
        o->handon_applied = 0;
        if (o->owned)
            pe_sigown_install(o);
    }
    pe_sigown_unlock(o, &saved);
}

void
pe_sigown_atfork_child(pe_sigown_t *o)
{
    pe_spin_reset(&o->lock);
    o->handon_users = 0;
    o->handon_applied = 0;
}
