#!/bin/bash
# 055 on Debian 13 (trixie): the same package, built on Debian 12, installed
# with apt-get into a debootstrapped trixie tree and booted (systemd 257,
# OpenSSH 10 whose sshd-session runs the AuthorizedKeysCommand, t64
# libraries), with the same checks, upgrade and purge included. The rootfs
# is cached like 055's (tests/lib/sdbox.sh, its own key).
# Run: ONLY=056 make check-integration (root).
export SDBOX_SUITE=trixie
exec bash "$TESTS_DIR/integration/055-system-nspawn.sh" "$@"
