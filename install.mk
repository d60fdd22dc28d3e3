# Install rules (included by the Makefile). DESTDIR is used only here.
# Every installed file is listed once below, and uninstall removes exactly
# those files plus the directories that belong to node-agent alone
# ($(LIBEXECDIR), $(DATADIR), $(SYSCONFDIR)/node-agent and its revoked-keys.d,
# the operator's revocations: cloud-config-exec(8)) when they are empty.
# Shared directories ($(SBINDIR), man8, sshd_config.d, ...) stay.
#
# Units, the sshd drop-in and the SELinux file contexts name the programs by
# path; they are installed with /usr/sbin and /usr/libexec/node-agent
# replaced by $(SBINDIR) and $(LIBEXECDIR), so PREFIX=/usr/local works.
#
# After installing on a live system (not into a DESTDIR):
#   systemd-sysusers && systemd-tmpfiles --create node-agent.conf
#   systemctl daemon-reload && systemctl enable --now node-agent.service \
#       cloud-config-exec.path cloud-config-exec.timer cloud-config-exec-containerd-probe.timer
#   systemctl reload ssh

INSTALL ?= install

MAN8 := $(wildcard man/*.8)
MAN5 := $(wildcard man/*.5)

# Programs are root-owned (sshd refuses an AuthorizedKeysCommand that is not);
# a non-root staging install (DESTDIR, packaging) cannot chown and leaves it
# to the package.
INSTALL_ROOT := $(if $(filter 0,$(shell id -u)),-o 0 -g 0)

UNIT_FILES    := node-agent.service node-agent.path cloud-config-exec.service cloud-config-exec.path \
                 cloud-config-exec.timer cloud-config-exec-pull@.service \
                 cloud-config-exec-kubelet-data-volume.service \
                 cloud-config-exec-containerd-probe.service cloud-config-exec-containerd-probe.timer \
                 cloud-config-exec-os-update.service
SELINUX_FILES := node_agent.te node_agent.if node_agent.fc
SSHD_DROPIN   := $(SYSCONFDIR)/ssh/sshd_config.d/50-node-agent.conf
# Stock Gardener user data's gardener-node-init.service starts node-agent instead
NODE_INIT_DROPIN := $(SYSTEMDUNITDIR)/gardener-node-init.service.d/50-node-agent.conf
EXAMPLEDIR    := $(DATADIR)/examples

SUBST = sed -e 's|/usr/sbin/node-agent|$(SBINDIR)/node-agent|g' \
            -e 's|/usr/sbin/cloud-config-exec|$(SBINDIR)/cloud-config-exec|g' \
            -e 's|/usr/libexec/node-agent/authkeys-cmd|$(LIBEXECDIR)/authkeys-cmd|g'

# Files with paths substituted, rebuilt when the directories change.
$(B)/install/paths: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SBINDIR) $(LIBEXECDIR)' | cmp -s - $@ || echo '$(SBINDIR) $(LIBEXECDIR)' >$@
$(B)/install/%: units/% $(B)/install/paths
	@mkdir -p $(dir $@)
	$(Q)$(SUBST) $< >$@
# (not below a directory named *.d: the Makefile -includes every $(B)/**/*.d)
$(B)/install/sshd/%: units/sshd_config.d/% $(B)/install/paths
	@mkdir -p $(dir $@)
	$(Q)$(SUBST) $< >$@
$(B)/install/selinux/%: selinux/% $(B)/install/paths
	@mkdir -p $(dir $@)
	$(Q)$(SUBST) -e 's|/usr/libexec/node-agent/|$(LIBEXECDIR)/|g' $< >$@

GENERATED := $(addprefix $(B)/install/,$(UNIT_FILES) sshd/50-node-agent.conf) \
             $(addprefix $(B)/install/selinux/,$(SELINUX_FILES))

.PHONY: install uninstall FORCE
FORCE:

install: $(PROGS) $(GENERATED)
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBEXECDIR)
	$(if $(wildcard agent/main.c),$(INSTALL) $(INSTALL_ROOT) -m 0755 $(B)/node-agent $(DESTDIR)$(SBINDIR)/node-agent)
	$(if $(wildcard cloud-config-exec/main.c),$(INSTALL) $(INSTALL_ROOT) -m 0755 $(B)/cloud-config-exec $(DESTDIR)$(SBINDIR)/cloud-config-exec)
	$(if $(wildcard authkeys-cmd/main.c),$(INSTALL) $(INSTALL_ROOT) -m 0755 $(B)/authkeys-cmd $(DESTDIR)$(LIBEXECDIR)/authkeys-cmd)
	$(if $(MAN8),$(INSTALL) -d -m 0755 $(DESTDIR)$(MANDIR)/man8 && $(INSTALL) -m 0644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/)
	$(if $(MAN5),$(INSTALL) -d -m 0755 $(DESTDIR)$(MANDIR)/man5 && $(INSTALL) -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/)
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)/ssh/sshd_config.d $(DESTDIR)$(SYSCONFDIR)/node-agent \
		$(DESTDIR)$(SYSCONFDIR)/node-agent/revoked-keys.d $(DESTDIR)$(DATADIR)/selinux $(DESTDIR)$(EXAMPLEDIR)
	$(INSTALL) -m 0644 $(addprefix $(B)/install/,$(UNIT_FILES)) $(DESTDIR)$(SYSTEMDUNITDIR)/
	$(INSTALL) -d -m 0755 $(DESTDIR)$(dir $(NODE_INIT_DROPIN))
	$(INSTALL) -m 0644 units/gardener-node-init.service.d/50-node-agent.conf $(DESTDIR)$(NODE_INIT_DROPIN)
	$(INSTALL) -m 0644 units/node-agent.tmpfiles $(DESTDIR)$(TMPFILESDIR)/node-agent.conf
	$(INSTALL) -m 0644 units/node-agent.sysusers $(DESTDIR)$(SYSUSERSDIR)/node-agent.conf
	$(INSTALL) -m 0644 $(B)/install/sshd/50-node-agent.conf $(DESTDIR)$(SSHD_DROPIN)
	$(INSTALL) -m 0644 units/config.json.example $(DESTDIR)$(SYSCONFDIR)/node-agent/config.json.example
	$(INSTALL) -m 0644 units/node-agent.service.d/api-server.conf.example $(DESTDIR)$(EXAMPLEDIR)/api-server.conf.example
	$(INSTALL) -m 0644 $(addprefix $(B)/install/selinux/,$(SELINUX_FILES)) $(DESTDIR)$(DATADIR)/selinux/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/node-agent $(DESTDIR)$(SBINDIR)/cloud-config-exec \
	      $(DESTDIR)$(LIBEXECDIR)/authkeys-cmd
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8))) \
	      $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(MAN5)))
	rm -f $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(UNIT_FILES)) $(DESTDIR)$(NODE_INIT_DROPIN) \
	      $(DESTDIR)$(TMPFILESDIR)/node-agent.conf $(DESTDIR)$(SYSUSERSDIR)/node-agent.conf \
	      $(DESTDIR)$(SSHD_DROPIN) $(DESTDIR)$(SYSCONFDIR)/node-agent/config.json.example \
	      $(DESTDIR)$(EXAMPLEDIR)/api-server.conf.example \
	      $(addprefix $(DESTDIR)$(DATADIR)/selinux/,$(SELINUX_FILES))
	-rmdir $(DESTDIR)$(dir $(NODE_INIT_DROPIN)) 2>/dev/null
	-rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(DATADIR)/selinux 2>/dev/null
	-rmdir $(DESTDIR)$(SYSCONFDIR)/node-agent/revoked-keys.d 2>/dev/null
	-rmdir $(DESTDIR)$(DATADIR) $(DESTDIR)$(SYSCONFDIR)/node-agent 2>/dev/null
