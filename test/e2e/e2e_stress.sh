#!/usr/bin/env bash
# e2e_stress: the short version of `make stress` (scripts/stress.sh), a few
# seconds per scenario, so that every run of make test checks that the host
# survives load, thread churn, dlopen and fork+exec storms, its own signal
# handlers, exit mid-profile and clients that leave.
STRESS_SHORT=1 exec bash scripts/stress.sh "${BUILD:-build}"
