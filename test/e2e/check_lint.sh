#!/usr/bin/env bash
# check_lint: the tree is clang-formatted, and whatever a signal handler, the
# malloc path or a PE_SIGSAFE function reaches is PE_SIGSAFE or async-signal-safe
# (scripts/lint.sh, scripts/sigsafe.py).
exec scripts/lint.sh
