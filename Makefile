# node-agent: build, test, install.
#
#   make                      build the three programs into $(B)/
#   make check                unit tests, then integration tests (root: real sshd, nspawn)
#   make check-quick          the edit loop: unit tests and the fast integration tests (< 5 min)
#   make check-sanitize       the same under ASan + UBSan
#   make check-vm             the real node: a Debian 12 VM under qemu (080)
#   make soak                 the campaigns (kills, faults, valgrind, restarts) long, fuzzing long
#   make fuzz                 build the libFuzzer targets and run each for FUZZ_SECONDS
#   make fuzz-coverage        the source coverage each target's seed corpus reaches
#   make deb                  the Debian package in $(B)/deb/ (scripts/build-deb), lintian-checked
#   make lint bench install uninstall clean
#
# Variables: PREFIX DESTDIR CFLAGS LDFLAGS V=1 B=<build dir> CC.

PREFIX        ?= /usr
DESTDIR       ?=
SBINDIR       ?= $(PREFIX)/sbin
LIBEXECDIR    ?= $(PREFIX)/libexec/node-agent
MANDIR        ?= $(PREFIX)/share/man
DATADIR       ?= $(PREFIX)/share/node-agent
SYSCONFDIR    ?= /etc
PKG_CONFIG    ?= pkg-config
SYSTEMDUNITDIR ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
TMPFILESDIR   ?= $(shell $(PKG_CONFIG) --variable=tmpfilesdir systemd 2>/dev/null || echo /usr/lib/tmpfiles.d)
SYSUSERSDIR   ?= $(shell $(PKG_CONFIG) --variable=sysusersdir systemd 2>/dev/null || echo /usr/lib/sysusers.d)

B             ?= build
CC            ?= cc
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
# Fuzz targets at once (tests/run-fuzz); make soak uses every core.
FUZZ_JOBS     ?= 1
NPROC         := $(shell nproc 2>/dev/null || echo 1)
# Integration tests run side by side (tests/run-integration).
JOBS          ?= 1
comma := ,

ifeq ($(V),1)
Q :=
else
Q := @
endif

CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
           -Wpointer-arith -Wcast-qual -Wwrite-strings -Wvla -Wundef -Wno-unused-parameter
ifneq ($(NO_WERROR),1)
WARN    += -Werror
endif
HARDEN  := -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection \
           -fcf-protection=full -fPIE
HARDEN_LD := -pie -Wl,-z,relro,-z,now,-z,noexecstack,--as-needed

# libselinux: cloud-config-exec labels what it creates (cloud-config-exec/
# label.h); --as-needed keeps it out of node-agent.
PKGS    := openssl libcurl libcjson libsystemd libseccomp yaml-0.1 libxxhash zlib libselinux
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS))
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS))
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka)
CMOCKA_LIBS   := $(shell $(PKG_CONFIG) --libs cmocka)

# The version is the package's (debian/changelog's first entry): --version,
# the User-Agent and node_agent_build_info say what dpkg says.
NA_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
ifeq ($(NA_VERSION),)
$(error no version in debian/changelog's first line)
endif

ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE -DNA_VERSION='"$(NA_VERSION)"' $(WARN) $(HARDEN) $(PKG_CFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS := $(HARDEN_LD) $(LDFLAGS)

# Sanitizer build: `make check-sanitize` re-runs everything from $(B)-sanitize.
ifeq ($(SANITIZE),1)
ALL_CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -DNA_SANITIZER=1
ALL_LDFLAGS += -fsanitize=address,undefined
endif

# ---- sources ---------------------------------------------------------------
# Every directory contributes all of its .c files; main.c is the only file
# that is not put in the directory's archive, so unit tests can link the rest.
#
# lib/ is split by domain, one archive each, and a folder sees only the
# headers of the domains it may use (the include path below is the only way
# to reach another folder's headers; tests/lint refuses "../" includes):
#   lib/base  errors, files, logging, JSON, base64, seccomp   sees base
#   lib/ssh   key lines, SSH wire format, certificates, KRL,  sees base ssh
#             the key snapshot, the key document
#   lib/kube  the Kubernetes API: watch, Lease, CSR, Events,  sees base kube
#             the health listener's request parser
#   lib/node  the node's configuration: OSC, YAML, criConfig, sees base kube node
#             images, gardener-node-agent's config, desired
#             state, result, pacing, config.json
# authkeys-cmd (static, runs at every ssh login) sees and links base and ssh
# only: a kube or node header does not compile there, and its link line
# names neither their archives nor OpenSSL, curl, cJSON (only libseccomp and
# libxxhash), so a base or ssh object that needed them would not link.
# cloud-config-exec (root, no network) sees base, ssh and node (no kube
# header: the Kubernetes API is node-agent's); it links all four archives
# because lib/node/gnaconfig.c uses lib/kube. node-agent sees everything.
# A file left at the top of lib/ would be built into nothing: say where it goes.
ifneq ($(wildcard lib/*.c lib/*.h),)
$(error $(wildcard lib/*.c lib/*.h): lib/ files belong in a domain folder (lib/base, lib/ssh, lib/kube or lib/node; see above))
endif
BASE_SRCS  := $(wildcard lib/base/*.c)
SSH_SRCS   := $(wildcard lib/ssh/*.c)
KUBE_SRCS  := $(wildcard lib/kube/*.c)
NODE_SRCS  := $(wildcard lib/node/*.c)
LIB_SRCS   := $(BASE_SRCS) $(SSH_SRCS) $(KUBE_SRCS) $(NODE_SRCS)
LIB_HDRS   := $(wildcard lib/*/*.h)

INC_BASE := -Ilib/base
INC_SSH  := $(INC_BASE) -Ilib/ssh
INC_KUBE := $(INC_BASE) -Ilib/kube
INC_NODE := $(INC_BASE) -Ilib/kube -Ilib/node
INC_AKC  := $(INC_SSH)
INC_EXEC := $(INC_BASE) -Ilib/ssh -Ilib/node
INC_ALL  := $(INC_BASE) -Ilib/ssh -Ilib/kube -Ilib/node
AGENT_SRCS := $(filter-out agent/main.c,$(wildcard agent/*.c))
AKC_SRCS   := $(filter-out authkeys-cmd/main.c,$(wildcard authkeys-cmd/*.c))
EXEC_SRCS  := $(filter-out cloud-config-exec/main.c,$(wildcard cloud-config-exec/*.c))
TEST_SRCS  := $(wildcard tests/unit/test-*.c)
TOOL_SRCS  := $(wildcard tests/tools/*.c)
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz-*.c)

# Objects live under $(B)/obj/: $(B)/<program> is the program itself.
obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

BASE_A  := $(B)/lib-base.a
SSH_A   := $(B)/lib-ssh.a
KUBE_A  := $(B)/lib-kube.a
NODE_A  := $(B)/lib-node.a
# All of lib/, in link order (a domain before those it uses).
LIB_A   := $(NODE_A) $(SSH_A) $(KUBE_A) $(BASE_A)
AGENT_A := $(B)/agent.a
AKC_A   := $(B)/authkeys-cmd.a
EXEC_A  := $(B)/cloud-config-exec.a

# A program is built once its directory has a main.c.
PROGS := $(if $(wildcard agent/main.c),$(B)/node-agent) \
         $(if $(wildcard authkeys-cmd/main.c),$(B)/authkeys-cmd) \
         $(if $(wildcard cloud-config-exec/main.c),$(B)/cloud-config-exec)
TESTS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(TEST_SRCS))
# Test-only programs (fixture generators), linked like the unit tests.
TOOLS := $(patsubst tests/tools/%.c,$(B)/tools/%,$(TOOL_SRCS))
# The LD_PRELOAD fault injector of the disk fault tests (tests/lib/faultfs.c).
TOOLS += $(B)/tools/faultfs.so

.PHONY: all check check-unit check-integration check-sanitize check-ci check-quick check-vm fetch soak fuzz fuzz-build \
        fuzz-replay fuzz-coverage lint bench install uninstall clean deb
.DEFAULT_GOAL := all
# Keep intermediate objects (unit-test .o files are built through a chain).
.SECONDARY:

all: $(PROGS) $(TESTS) $(TOOLS)

# Each folder's include path (see "sources").
$(B)/obj/lib/base/%.o:          INC := $(INC_BASE)
$(B)/obj/lib/ssh/%.o:           INC := $(INC_SSH)
$(B)/obj/lib/kube/%.o:          INC := $(INC_KUBE)
$(B)/obj/lib/node/%.o:          INC := $(INC_NODE)
$(B)/obj/authkeys-cmd/%.o:      INC := $(INC_AKC)
$(B)/obj/cloud-config-exec/%.o: INC := $(INC_EXEC)
$(B)/obj/agent/%.o:             INC := $(INC_ALL)
$(B)/obj/tests/%.o:             INC := $(INC_ALL)

# The files that print NA_VERSION are built again when it changes.
$(call obj,agent/main.c agent/http.c agent/metrics.c cloud-config-exec/main.c authkeys-cmd/main.c): debian/changelog

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(INC) -c -o $@ $<

$(B)/%.a:
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BASE_A):  $(call obj,$(BASE_SRCS))
$(SSH_A):   $(call obj,$(SSH_SRCS))
$(KUBE_A):  $(call obj,$(KUBE_SRCS))
$(NODE_A):  $(call obj,$(NODE_SRCS))
$(AGENT_A): $(call obj,$(AGENT_SRCS))
$(AKC_A):   $(call obj,$(AKC_SRCS))
$(EXEC_A):  $(call obj,$(EXEC_SRCS))

# An empty archive is fine: `ar` with no members still writes a valid file.
$(B)/node-agent: $(B)/obj/agent/main.o $(AGENT_A) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(B)/cloud-config-exec: $(B)/obj/cloud-config-exec/main.o $(EXEC_A) $(LIB_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

# authkeys-cmd runs twice per ssh login, so its exec cost is the login's.
# Measured here (hyperfine, see tests/bench/run): cat of a one-line file
# 0.9 ms, a static-pie hello 0.5 ms, a dynamic hello linking libsystemd,
# libseccomp and libxxhash 1.3 ms -- loading the shared libraries alone
# would break the goal (<= 1.5 x cat). So it is linked -static-pie against
# libseccomp.a and libxxhash.a (Full RELRO, PIE, canary as everything else)
# and logs like the other programs through lib/base/log.c, which speaks the
# journal's native protocol (lib/base/journal.c) rather than loading
# libsystemd. It links lib/ssh and lib/base only (see "sources").
# Sanitizer builds cannot be static: they link dynamically.
ifeq ($(SANITIZE),1)
AKC_LDFLAGS := $(ALL_LDFLAGS)
AKC_LIBS ?= $(shell $(PKG_CONFIG) --libs libseccomp libxxhash)
else
AKC_LDFLAGS := -static-pie -Wl,-z,relro,-z,now,-z,noexecstack $(LDFLAGS)
AKC_LIBS ?= $(shell $(PKG_CONFIG) --libs --static libseccomp libxxhash)
endif
$(B)/authkeys-cmd: $(B)/obj/authkeys-cmd/main.o $(AKC_A) $(SSH_A) $(BASE_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(AKC_LDFLAGS) -o $@ $^ $(AKC_LIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(AGENT_A) $(EXEC_A) $(AKC_A) $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(CMOCKA_LIBS)

$(B)/tools/%: $(B)/obj/tests/tools/%.o $(AGENT_A) $(EXEC_A) $(AKC_A) $(LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

# Interposes open/write/fsync/rename/...: no _FORTIFY_SOURCE (its inline
# wrappers would clash) and no sanitizer (it is preloaded into programs that
# may carry their own runtime).
$(B)/tools/faultfs.so: tests/lib/faultfs.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) -std=gnu11 $(WARN) -U_FORTIFY_SOURCE -O2 -g -fPIC -shared -Wl,-z,relro,-z,now -o $@ $< -ldl

$(B)/obj/tests/unit/%.o: ALL_CFLAGS += $(CMOCKA_CFLAGS) -Itests/unit

# ---- tests -----------------------------------------------------------------
check: check-unit check-integration

check-unit: $(TESTS)
	$(Q)tests/run-unit $(TESTS)

check-integration: $(PROGS) $(TESTS) $(TOOLS)
	$(Q)B=$(abspath $(B)) JOBS=$(JOBS) tests/run-integration

# The sanitizer pass runs every unit test, and the integration tests that
# drive our parsers and the agent with outside input (the snapshot and KRL
# readers under a real sshd, the executor's OSC, key, criConfig and image
# handling, the forged desired.json, every node-agent test against the
# stand-in API server, the agent's disk faults and HTTP faults (041)). The
# system tests (systemd in nspawn, units, SELinux, install, the Debian
# package on Debian 12 and 13, the VM), the real kube-apiserver's tests
# (043, 049, 072: the same parsers as 040-048, fed by a real server), the
# crash and fault-injection loops of the executor, the valgrind run and the
# clock test and the slow network faults (063: five minutes of outages and
# one-byte-a-second answers, through the same reader as 041) run on the
# production build only: they exercise the same parsers again, and CI's 75
# minutes do not hold the suite twice. 039 tests the stand-in API server with
# curl: nothing of ours runs in it.
# SANITIZE_INTEGRATION=all runs everything.
SANITIZE_INTEGRATION ?= 010- 011- 020- 021- 023- 024- 026- 027- 028- 037- 040- 041- 042- 044- 045- 046- \
                        047- 048- 065- 081-
check-sanitize:
	$(Q)$(MAKE) B=$(B)-sanitize SANITIZE=1 CC=clang check-unit
	$(Q)$(MAKE) B=$(B)-sanitize SANITIZE=1 CC=clang \
		PREFIXES="$(filter-out all,$(SANITIZE_INTEGRATION))" check-integration

# CI (scripts/test-all) runs each integration test once, side by side
# (JOBS at once, tests/run-integration): the ones above from the sanitizer
# build only (a second run on the production build exercised the same code
# without the sanitizers' checks), every other one from the production
# build; the VM node test in a stage of its own (check-vm). Both builds
# must exist. `make check` still runs them all on the production build.
check-ci:
	$(Q)B=$(abspath $(B)) SANITIZE_B=$(abspath $(B))-sanitize \
		SANITIZE_PREFIXES="$(filter-out all,$(SANITIZE_INTEGRATION))" EXCLUDE="080-" JOBS=$(JOBS) \
		tests/run-integration

# The edit loop: the unit tests and the integration tests that take seconds
# (tests/integration/ORDER names the slow ones), side by side; under 5 min.
QUICK_INTEGRATION := 010- 011- 012- 020- 021- 023- 024- 025- 026- 027- 028- 029- 031- 032- 033- 034- 035- 038- \
                     037- 039- 050- 052- 057- 064- 067- 069- 076- 077- 079- 081-
check-quick: check-unit
	$(Q)$(MAKE) JOBS=3 PREFIXES="$(QUICK_INTEGRATION)" check-integration

# The campaigns at their long size (TEST_SIZE=soak, tests/lib/common.sh
# sized: CI runs the short one): kills of the executor and the agent,
# valgrind, network faults, API server restarts; then every fuzz target for
# SOAK_FUZZ_SECONDS. The last figures are in docs/testing.md ("make soak").
SOAK_INTEGRATION := 022- 060- 062- 063- 072- 082-
SOAK_FUZZ_SECONDS ?= 120
# A campaign at its long size outlasts a test's usual limit (900 s).
SOAK_TEST_TIMEOUT ?= 3600
soak: $(PROGS) $(TESTS) $(TOOLS)
	$(Q)TEST_SIZE=soak TEST_TIMEOUT=$(SOAK_TEST_TIMEOUT) $(MAKE) JOBS=$(NPROC) PREFIXES="$(SOAK_INTEGRATION)" check-integration
	$(Q)$(MAKE) FUZZ_SECONDS=$(SOAK_FUZZ_SECONDS) FUZZ_JOBS=$(NPROC) fuzz

# The real node (080, issue 23): a Debian 12 VM under qemu, 20-30 min under
# TCG. VM_SCENARIOS picks scenarios (the test's header). A skip (no qemu,
# say) fails here: CI must not pass without the real node.
check-vm:
	$(Q)B=$(abspath $(B)) tests/fetch vm
	$(Q)$(MAKE) NA_VM_TEST=1 FAIL_ON_SKIP=1 ONLY=080- check-integration

# The Debian trees the tests boot (the VM's, the nspawn boxes'), fetched
# from the mirror (retried) into $(B)/vm-cache and $(B)/sdbox-cache: the
# tests run in network namespaces of their own.
fetch:
	$(Q)B=$(abspath $(B)) tests/fetch

# ---- fuzzing ---------------------------------------------------------------
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -g -O1 $(INC_ALL) $(PKG_CFLAGS) \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DNA_FUZZING=1
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
# lib/ is compiled once for all targets (instrumented, not linked with the
# fuzzer's main) into one archive: compiling it into each of the 21 targets
# cost CI about six minutes.
FUZZ_LIB_OBJS := $(patsubst %.c,$(B)/fuzz-obj/%.o,$(LIB_SRCS))
FUZZ_LIB_A    := $(B)/fuzz-obj/lib.a

$(B)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_CFLAGS)) \
		-MMD -MP -c -o $@ $<

$(FUZZ_LIB_A): $(FUZZ_LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

-include $(FUZZ_LIB_OBJS:.o=.d) $(patsubst $(B)/fuzz/%,$(B)/fuzz-obj/%.d,$(FUZZ_BINS))

$(B)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -MF $(B)/fuzz-obj/$(notdir $@).d -o $@ $< $(FUZZ_LIB_A) $(PKG_LIBS)

# fuzz-restart compiles agent/node.c into itself (see the target).
$(B)/fuzz/fuzz-restart: agent/node.c agent/node.h
# fuzz-desired compiles cloud-config-exec/bounds.c into itself.
$(B)/fuzz/fuzz-desired: cloud-config-exec/bounds.c cloud-config-exec/bounds.h

fuzz-build: $(FUZZ_BINS)

# Replays every seed corpus, then fuzzes each target for FUZZ_SECONDS.
fuzz: fuzz-build
	$(Q)B=$(abspath $(B)) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) tests/run-fuzz $(FUZZ_BINS)

fuzz-replay: fuzz-build
	$(Q)B=$(abspath $(B)) FUZZ_SECONDS=0 tests/run-fuzz $(FUZZ_BINS)

# The line, branch and function coverage each target's seed corpus reaches
# in the files it tests (clang source-based coverage, llvm-cov).
FUZZ_COV_CFLAGS := -std=gnu11 -D_GNU_SOURCE -g -O0 $(INC_ALL) $(PKG_CFLAGS) -fsanitize=fuzzer \
                   -fprofile-instr-generate -fcoverage-mapping -DNA_FUZZING=1
FUZZ_COV_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz-cov/%,$(FUZZ_SRCS))

$(B)/fuzz-cov/%: tests/fuzz/%.c $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCOV $@")
	$(Q)$(FUZZ_CC) $(FUZZ_COV_CFLAGS) -o $@ $< $(LIB_SRCS) $(PKG_LIBS)

$(B)/fuzz-cov/fuzz-restart: agent/node.c agent/node.h

fuzz-coverage: $(FUZZ_COV_BINS)
	$(Q)tests/fuzz-coverage $(FUZZ_COV_BINS)

# ---- lint, bench -----------------------------------------------------------
lint:
	$(Q)tests/lint

bench: $(PROGS) $(TOOLS)
	$(Q)B=$(abspath $(B)) tests/bench/run

# ---- install ---------------------------------------------------------------
include install.mk

# The Debian package, built from a copy of the tree, then lintian (errors and
# warnings fail): $(B)/deb/kube-node-agent_*.deb (and the transitional
# node-agent_*_all.deb of the package's old name), $(B)/deb/lintian.txt.
deb:
	$(Q)scripts/build-deb $(B)/deb

clean:
	rm -rf $(B) $(B)-sanitize

-include $(shell find $(B)/obj $(B)/fuzz-obj -name '*.d' -type f 2>/dev/null)
