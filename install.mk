# Install rules (included by the Makefile). DESTDIR is used only here.
# Every installed path is listed once in INSTALLED so uninstall removes
# exactly what install wrote.

INSTALL ?= install

MAN8 := $(wildcard man/*.8)
MAN5 := $(wildcard man/*.5)

.PHONY: install uninstall

install: $(PROGS)
	$(INSTALL) -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBEXECDIR)
	$(if $(wildcard agent/main.c),$(INSTALL) -m 0755 $(B)/node-agent $(DESTDIR)$(SBINDIR)/node-agent)
	$(if $(wildcard cloud-config-exec/main.c),$(INSTALL) -m 0755 $(B)/cloud-config-exec $(DESTDIR)$(SBINDIR)/cloud-config-exec)
	$(if $(wildcard authkeys-cmd/main.c),$(INSTALL) -m 0755 $(B)/authkeys-cmd $(DESTDIR)$(LIBEXECDIR)/authkeys-cmd)
	$(if $(MAN8),$(INSTALL) -d -m 0755 $(DESTDIR)$(MANDIR)/man8 && $(INSTALL) -m 0644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/)
	$(if $(MAN5),$(INSTALL) -d -m 0755 $(DESTDIR)$(MANDIR)/man5 && $(INSTALL) -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/)

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/node-agent $(DESTDIR)$(SBINDIR)/cloud-config-exec \
	      $(DESTDIR)$(LIBEXECDIR)/authkeys-cmd
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(MAN8))) \
	      $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(MAN5)))
	-rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null
