#!/usr/bin/env bash
# check_lint: the tree is clang-formatted and the signal handler calls only
# PE_SIGSAFE functions (scripts/lint.sh).
exec scripts/lint.sh
