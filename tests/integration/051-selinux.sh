#!/bin/bash
# selinux/: the node_agent policy module builds with the Debian refpolicy
# devel Makefile, links against the installed base policy, and sesearch
# proves what each domain may and may not do.
#
# The link runs in a scratch copy of the policy store: `semodule -p ROOT`
# (alternate policy root) with copies of /var/lib/selinux and /etc/selinux
# under ROOT, so the host's store and policy are never written (checked at
# the end). SELinux is not active in this kernel; this is a static proof.
source "$TESTS_DIR/lib/common.sh"
require_root
DEVEL=/usr/share/selinux/devel/Makefile
[ -f "$DEVEL" ] || skip_all "selinux-policy-dev not installed ($DEVEL)"
command -v semodule >/dev/null && command -v sesearch >/dev/null ||
	skip_all "semodule/sesearch not installed (policycoreutils, setools)"
[ -d /var/lib/selinux/default ] && [ -d /etc/selinux/default ] ||
	skip_all "no installed base policy (selinux-policy-default)"

SRC=$TESTS_DIR/../selinux
W=$(scratch)
host_sum() {
	find /var/lib/selinux /etc/selinux -type f -print0 2>/dev/null | sort -z |
		xargs -0 md5sum 2>/dev/null | md5sum
}
before=$(host_sum)
quiet() { "$@" >"$W/quiet.log" 2>&1; }

# build
mkdir -p "$W/src"
cp "$SRC"/node_agent.te "$SRC"/node_agent.if "$SRC"/node_agent.fc "$W/src/"
if make -C "$W/src" -f "$DEVEL" node_agent.pp >"$W/build.log" 2>&1; then
	ok "module builds with $DEVEL"
else
	sed 's/^/#   /' "$W/build.log"
	fail "module builds with $DEVEL"
	finish
	exit 1
fi

# link into a scratch store
R=$W/root
mkdir -p "$R/var/lib" "$R/etc"
cp -a /var/lib/selinux "$R/var/lib/"
cp -a /etc/selinux "$R/etc/"
# libsemanage prints "user sddm not in password file" for Debian's policy: noise.
if semodule -p "$R" -n -i "$W/src/node_agent.pp" >"$W/link.log" 2>&1; then
	ok "semodule -n -i links node_agent.pp against the base policy (scratch store)"
else
	sed 's/^/#   /' "$W/link.log"
	fail "semodule -n -i links node_agent.pp"
	finish
	exit 1
fi
P=$(ls "$R"/etc/selinux/default/policy/policy.* | sort -V | tail -1)
FC=$R/etc/selinux/default/contexts/files/file_contexts
# The file contexts as libselinux resolves them (the module's entries
# against the base policy's, Debian's /lib -> /usr/lib equivalence): every
# unit the package ships, the programs, the state directories.
fc_type() { matchpathcon -f "$FC" "$1" 2>/dev/null | awk '{ split($2, c, ":"); print c[3] }'; }
for u in "$SRC"/../units/*.service "$SRC"/../units/*.path "$SRC"/../units/*.timer; do
	u=${u##*/}
	check "file contexts: /lib/systemd/system/$u is node_agent_unit_t ($(fc_type "/lib/systemd/system/$u"))" \
		test "$(fc_type "/lib/systemd/system/$u")" = node_agent_unit_t
done
for pt in /usr/libexec/node-agent/authkeys-cmd=authkeys_cmd_exec_t /usr/sbin/cloud-config-exec=cloud_config_exec_exec_t \
	/usr/sbin/node-agent=node_agent_exec_t /var/lib/node-agent/desired.json=node_agent_var_lib_t \
	/var/lib/cloud-config-exec/authkeys.snap=cloud_config_exec_var_lib_t /etc/node-agent/config.json=node_agent_conf_t; do
	check "file contexts: ${pt%%=*} is ${pt#*=} ($(fc_type "${pt%%=*}"))" test "$(fc_type "${pt%%=*}")" = "${pt#*=}"
done

# The link step must be able to fail: an unknown type compiles but does not link.
mkdir -p "$W/bad"
cp "$W/src/node_agent.if" "$W/src/node_agent.fc" "$W/bad/"
sed 's/^gen_require(`$/gen_require(`\n\ttype no_such_type_t;/' "$W/src/node_agent.te" >"$W/bad/node_agent.te"
printf 'allow node_agent_t no_such_type_t:file read;\n' >>"$W/bad/node_agent.te"
if make -C "$W/bad" -f "$DEVEL" node_agent.pp >/dev/null 2>&1; then
	check_not "link rejects a module with an unknown type (compiles fine)" \
		quiet semodule -p "$R" -n -i "$W/bad/node_agent.pp"
else
	fail "module with an unknown type should compile (only the link catches it)"
fi

# The assertions, sesearch syntax, one process for all (tests/lib/sesearch-batch.py):
# want = some rule matches, deny = none does, uncond = none outside a boolean.
cat >"$W/assertions" <<'ASSERT'
# node_agent_t: network, its own state; no home dirs, no system config
want -A -s node_agent_t -t http_port_t -c tcp_socket -p name_connect
want -A -s node_agent_t -t unreserved_port_t -c tcp_socket -p name_connect
want -A -s node_agent_t -t unreserved_port_t -c tcp_socket -p name_bind
want -A -s node_agent_t -t node_t -c tcp_socket -p node_bind
want -A -s node_agent_t -t node_agent_var_lib_t -c file -p write,create,rename
want -A -s node_agent_t -t node_agent_conf_t -c file -p read
want -A -s node_agent_t -t cloud_config_exec_var_lib_t -c file -p read
want -A -s node_agent_t -t init_t -c unix_dgram_socket -p sendto
deny -A -s node_agent_t -c capability
deny -A -s node_agent_t -t user_home_dir_t -c dir -p write,add_name,remove_name
deny -A -s node_agent_t -t user_home_t -c file,dir -p write,create,append,add_name
deny -A -s node_agent_t -t ssh_home_t -c file,dir -p write,create,append,add_name
deny -A -s node_agent_t -t etc_t -c file,dir -p write,create,append,add_name,rename,unlink
deny -A -s node_agent_t -t shadow_t -c file -p read,write
deny -A -s node_agent_t -t systemd_unit_t -c file -p write,create
deny -A -s node_agent_t -t node_agent_conf_t -c file -p write,create
deny -A -s node_agent_t -t cloud_config_exec_var_lib_t -c file,dir -p write,create,add_name
deny -A -s node_agent_t -t sshd_key_t -c file -p write,append
deny -A -s node_agent_t -c service -p start,stop
deny -A -s node_agent_t -t system_dbusd_t -c unix_stream_socket -p connectto
# cloud_config_exec_t: OSC files, units via D-Bus, ~/.ssh, useradd; no network
want -A -s cloud_config_exec_t -t etc_t -c file -p write,create,rename
want -A -s cloud_config_exec_t -t var_lib_t -c file -p write,create
want -A -s cloud_config_exec_t -t ssh_home_t -c file -p write,create,rename,setattr
want -A -s cloud_config_exec_t -t ssh_home_t -c dir -p create
want -A -s cloud_config_exec_t -t cloud_config_exec_var_lib_t -c file -p write,create,rename
want -A -s cloud_config_exec_t -t node_agent_var_lib_t -c file -p read
want -A -s cloud_config_exec_t -t system_dbusd_t -c unix_stream_socket -p connectto
want -A -s cloud_config_exec_t -t init_t -c dbus -p send_msg
want -A -s cloud_config_exec_t -t init_t -c system -p reload
want -A -s cloud_config_exec_t -t systemd_unit_t -c service -p start,stop
want -A -s cloud_config_exec_t -t etc_t -c service -p start,stop
want -T -s cloud_config_exec_t -t useradd_exec_t -c process
want -A -s cloud_config_exec_t -c capability -p chown,dac_override,fowner
deny -A -s cloud_config_exec_t -c tcp_socket,udp_socket -p name_connect,name_bind,create
deny -A -s cloud_config_exec_t -c rawip_socket,packet_socket,netlink_route_socket -p create
deny -A -s cloud_config_exec_t -c capability -p sys_admin,setuid,setgid,net_admin,net_raw,sys_module,sys_ptrace
# (the key document OSC file goes into the agent's state dir; never a directory there)
want -A -s cloud_config_exec_t -t node_agent_var_lib_t -c file -p create,rename
deny -A -s cloud_config_exec_t -t node_agent_var_lib_t -c dir -p create,rmdir,setattr
deny -A -s cloud_config_exec_t -t node_agent_unit_t -c file -p write,create,unlink
deny -A -s cloud_config_exec_t -t node_agent_unit_t -c service -p stop,disable
deny -A -s cloud_config_exec_t -t shadow_t -c file -p write
# cloud_config_pull_t: ctr in the pull unit; the registry and containerd's socket; nothing written
want -A -s init_t -t cloud_config_pull_t -c process -p transition
want -A -s cloud_config_pull_t -t bin_t -c file -p entrypoint
deny -T -s init_t -t bin_t -c process -D cloud_config_pull_t
want -T -s init_t -t bin_t -c process -D initrc_t
want -A -s cloud_config_pull_t -t initrc_t -c unix_stream_socket -p connectto
want -A -s cloud_config_pull_t -t http_port_t -c tcp_socket -p name_connect
want -A -s cloud_config_pull_t -t unreserved_port_t -c tcp_socket -p name_connect
want -A -s cloud_config_pull_t -t etc_t -c file -p read
want -A -s cloud_config_exec_t -t node_agent_unit_t -c service -p start
deny -A -s cloud_config_pull_t -c capability
deny -A -s cloud_config_pull_t -t etc_t -c file,dir -p write,create,append,add_name,rename,unlink
deny -A -s cloud_config_pull_t -t bin_t -c file -p write,create
deny -A -s cloud_config_pull_t -t cloud_config_exec_var_lib_t
deny -A -s cloud_config_pull_t -t node_agent_var_lib_t
deny -A -s cloud_config_pull_t -t ssh_home_t
deny -A -s cloud_config_pull_t -t shadow_t
deny -A -s cloud_config_pull_t -c tcp_socket -p name_bind
deny -A -s cloud_config_pull_t -c service -p start,stop
deny -A -s node_agent_t -t cloud_config_pull_t -c process -p transition
deny -A -s cloud_config_exec_t -t cloud_config_pull_t -c process -p transition
# cloud_config_probe_t: the containerd probe unit; ctr, containerd's socket, its verdict file; nothing else
want -A -s init_t -t cloud_config_probe_t -c process -p transition
want -A -s cloud_config_probe_t -t cloud_config_exec_exec_t -c file -p entrypoint
want -T -s init_t -t cloud_config_exec_exec_t -c process -D cloud_config_exec_t
want -A -s cloud_config_probe_t -t bin_t -c file -p execute,execute_no_trans
deny -T -s cloud_config_probe_t -t bin_t -c process
want -A -s cloud_config_probe_t -t initrc_t -c unix_stream_socket -p connectto
want -A -s cloud_config_probe_t -t cloud_config_exec_var_lib_t -c file -p write,create,rename
want -A -s cloud_config_probe_t -t node_agent_conf_t -c file -p read
deny -A -s cloud_config_probe_t -c capability
deny -A -s cloud_config_probe_t -c tcp_socket,udp_socket -p create,name_connect,name_bind
deny -A -s cloud_config_probe_t -c rawip_socket,packet_socket,netlink_route_socket -p create
deny -A -s cloud_config_probe_t -t system_dbusd_t -c unix_stream_socket -p connectto
deny -A -s cloud_config_probe_t -c service -p start,stop
deny -A -s cloud_config_probe_t -t etc_t -c file,dir -p write,create,append,add_name,rename,unlink
deny -A -s cloud_config_probe_t -t bin_t -c file -p write,create
deny -A -s cloud_config_probe_t -t cloud_config_exec_var_lib_t -c dir -p create,rmdir,setattr
deny -A -s cloud_config_probe_t -t node_agent_var_lib_t
deny -A -s cloud_config_probe_t -t ssh_home_t
deny -A -s cloud_config_probe_t -t shadow_t
deny -A -s node_agent_t -t cloud_config_probe_t -c process -p transition
deny -A -s cloud_config_exec_t -t cloud_config_probe_t -c process -p transition
# authkeys_cmd_t: from sshd_t, reads the snapshot, writes sshd's pipe; nothing else
want -T -s sshd_t -t authkeys_cmd_exec_t -c process
# OpenSSH >= 9.8 (Debian 13: 10.0) runs the command from sshd-session (the
# per-connection monitor the listener execs), not from the listener.
# refpolicy labels sshd-session (and sshd-auth) sshd_exec_t, and sshd_t
# executes sshd_exec_t without a transition: sshd-session is sshd_t, so the
# sshd_t -> authkeys_cmd_t transition above is the one that applies. Checked
# here on this host's policy and in Debian 13's own (056, in the box).
want -A -s sshd_t -t sshd_exec_t -c file -p execute_no_trans
deny -T -s sshd_t -t sshd_exec_t -c process
want -A -s sshd_t -t authkeys_cmd_exec_t -c file -p execute
want -A -s sshd_t -t authkeys_cmd_t -c process -p transition
want -A -s authkeys_cmd_t -t authkeys_cmd_exec_t -c file -p entrypoint
want -A -s authkeys_cmd_t -t cloud_config_exec_var_lib_t -c file -p read
want -A -s authkeys_cmd_t -t sshd_t -c fifo_file -p write
want -A -s authkeys_cmd_t -t sshd_t -c fd -p use
deny -A -s authkeys_cmd_t -c tcp_socket,udp_socket -p create,name_connect,name_bind,connect
deny -A -s authkeys_cmd_t -c rawip_socket,packet_socket,netlink_route_socket -p create
deny -A -s authkeys_cmd_t -c capability
deny -A -s authkeys_cmd_t -t cloud_config_exec_var_lib_t -c file,dir -p write,append,create,add_name,remove_name,rename,unlink,setattr
# sshd reads the KRL (RevokedKeys) in the executor's directory, and never writes there
want -A -s sshd_t -t cloud_config_exec_var_lib_t -c file -p read
deny -A -s sshd_t -t cloud_config_exec_var_lib_t -c file,dir -p write,append,create,add_name,remove_name,rename,unlink,setattr
deny -A -s authkeys_cmd_t -t node_agent_var_lib_t
deny -A -s authkeys_cmd_t -t ssh_home_t
deny -A -s authkeys_cmd_t -t user_home_t
deny -A -s authkeys_cmd_t -t sshd_key_t
deny -A -s authkeys_cmd_t -t shadow_t
deny -A -s authkeys_cmd_t -t etc_t -c file,dir -p write,create,add_name
deny -A -s authkeys_cmd_t -c process -p execmem,execstack,transition
deny -A -s authkeys_cmd_t -t bin_t -c file -p execute
# The three domains cannot enter each other.
deny -A -s node_agent_t -t cloud_config_exec_t -c process -p transition
deny -A -s node_agent_t -t authkeys_cmd_t -c process -p transition
deny -A -s authkeys_cmd_t -t node_agent_t -c process -p transition
# usr_t/bin_t (/opt, /opt/bin) only under the tunable, never unconditionally
want -A -s cloud_config_exec_t -t bin_t -c file -p write,create -b cloud_config_exec_manage_bin_usr
uncond -A -s cloud_config_exec_t -t bin_t -c file -p write,create
uncond -A -s cloud_config_exec_t -t usr_t -c file -p write,create
# cloud_config_os_update_t: the OS update unit (SELinuxContext=), entered
# by systemd only, never automatically, never by the other domains; it reads
# the command and runs it in initrc_t (bin_t only), itself confined
want -A -s init_t -t cloud_config_os_update_t -c process -p transition
want -A -s cloud_config_os_update_t -t cloud_config_exec_exec_t -c file -p entrypoint
want -T -s init_t -t cloud_config_exec_exec_t -c process -D cloud_config_exec_t
deny -T -s init_t -t cloud_config_exec_exec_t -c process -D cloud_config_os_update_t
want -T -s cloud_config_os_update_t -t bin_t -c process -D initrc_t
want -A -s cloud_config_os_update_t -t initrc_t -c process -p transition
want -A -s initrc_t -t cloud_config_os_update_t -c fifo_file -p write
want -A -s cloud_config_os_update_t -t cloud_config_exec_var_lib_t -c file -p read
deny -A -s cloud_config_os_update_t -c tcp_socket,udp_socket -p create,name_connect
deny -A -s cloud_config_os_update_t -t usr_t -c file -p write,create
deny -A -s cloud_config_os_update_t -t boot_t -c file -p write,create
deny -A -s cloud_config_os_update_t -t cloud_config_exec_var_lib_t -c file -p write,create
deny -A -s cloud_config_os_update_t -c capability
deny -A -s cloud_config_os_update_t -t usr_t -c file -p execute
# NoNewPrivileges=yes units: their domain transitions need nnp_transition
want -A -s init_t -t node_agent_t -c process2 -p nnp_transition
want -A -s init_t -t cloud_config_exec_t -c process2 -p nnp_transition
want -A -s init_t -t cloud_config_pull_t -c process2 -p nnp_transition
want -A -s init_t -t cloud_config_probe_t -c process2 -p nnp_transition
want -A -s init_t -t cloud_config_datavol_t -c process2 -p nnp_transition
want -A -s cloud_config_exec_t -t useradd_t -c process2 -p nnp_transition
# what a real Debian node has: units in /etc/systemd/system (systemd_unit_t),
# containerd's socket initrc_runtime_t, the credentials directory (ramfs)
want -A -s cloud_config_exec_t -t systemd_unit_t -c file -p create,write,rename,unlink
want -A -s cloud_config_exec_t -t systemd_unit_t -c service -p enable,start
want -A -s cloud_config_exec_t -t initrc_runtime_t -c sock_file -p write
want -A -s cloud_config_exec_t -t initrc_t -c unix_stream_socket -p connectto
want -A -s cloud_config_exec_t -t sysfs_t -c file -p read
want -A -s cloud_config_exec_t -t etc_runtime_t -c file -p read
deny -A -s cloud_config_exec_t -t etc_runtime_t -c file -p write,create
want -A -s cloud_config_pull_t -t initrc_runtime_t -c sock_file -p write
want -A -s cloud_config_probe_t -t initrc_runtime_t -c sock_file -p write
want -A -s node_agent_t -t ramfs_t -c file -p read
want -A -s node_agent_t -t cloud_config_exec_var_lib_t -c dir -p watch
deny -A -s node_agent_t -t ramfs_t -c file,dir -p write,create,add_name
want -A -s authkeys_cmd_t -t cloud_config_exec_var_lib_t -c file -p map
# the executor labels what it creates (setfscreate, the file contexts); no
# other of the agent's domains may
want -A -s cloud_config_exec_t -t cloud_config_exec_t -c process -p setfscreate
want -A -s cloud_config_exec_t -t file_context_t -c file -p read
deny -A -s node_agent_t -c process -p setfscreate
deny -A -s authkeys_cmd_t -c process -p setfscreate
deny -A -s cloud_config_exec_t -c file,dir -p relabelfrom,relabelto
# cloud_config_datavol_t: the data volume unit only; block devices, mounts
# of an ext4 on /var/lib/kubelet and its own directory in /run; no network
want -A -s init_t -t cloud_config_datavol_t -c process -p transition
deny -T -s init_t -t cloud_config_exec_exec_t -c process -D cloud_config_datavol_t
deny -A -s cloud_config_exec_t -t cloud_config_datavol_t -c process -p transition
deny -A -s node_agent_t -t cloud_config_datavol_t -c process -p transition
want -A -s cloud_config_datavol_t -t fixed_disk_device_t -c blk_file -p read,write
want -A -s cloud_config_datavol_t -t fs_t -c filesystem -p mount,unmount
want -A -s cloud_config_datavol_t -t var_lib_t -c dir -p mounton
want -T -s cloud_config_datavol_t -t var_run_t -c dir -D cloud_config_datavol_runtime_t
want -A -s cloud_config_datavol_t -t cloud_config_datavol_runtime_t -c dir -p mounton,create,rmdir
deny -A -s cloud_config_datavol_t -t var_run_t -c dir -p mounton,create,rmdir
deny -A -s cloud_config_datavol_t -t etc_t -c dir -p mounton
deny -A -s cloud_config_datavol_t -c tcp_socket,udp_socket -p create,name_connect,name_bind
deny -A -s cloud_config_datavol_t -t etc_t -c file,dir -p write,create,add_name
deny -A -s cloud_config_datavol_t -t shadow_t
deny -A -s cloud_config_datavol_t -t ssh_home_t
deny -A -s cloud_config_datavol_t -t cloud_config_exec_var_lib_t -c file -p write,create
deny -A -s cloud_config_datavol_t -c capability -p net_admin,setuid,setgid,sys_module,sys_ptrace
# no domain of the module is unconfined or permissive
confined node_agent_t cloud_config_exec_t cloud_config_pull_t cloud_config_probe_t cloud_config_datavol_t cloud_config_os_update_t authkeys_cmd_t
deny -A -s cloud_config_exec_t -t cloud_config_os_update_t -c process -p transition
deny -A -s node_agent_t -t cloud_config_os_update_t -c process -p transition
deny -A -s authkeys_cmd_t -t cloud_config_os_update_t -c process -p transition
want -A -s cloud_config_exec_t -t node_agent_unit_t -c service -p start
ASSERT
SEBATCH=$TESTS_DIR/lib/sesearch-batch.py
/usr/bin/python3 "$SEBATCH" "$P" <"$W/assertions" >"$W/assert.out" 2>&1
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok }" ;;
	"not ok "*) fail "${line#not ok }" ;;
	*) echo "$line" ;;
	esac
done <"$W/assert.out"
grep -q '^ok \|^not ok ' "$W/assert.out" || fail "sesearch-batch.py produced no results: $(head -3 "$W/assert.out")"
# ... and the tool can fail: a deny that the policy contradicts.
check_not "assertion tool reports a contradicted deny" sh -c \
	'echo "deny -A -s node_agent_t -t node_agent_var_lib_t -c file -p write" | /usr/bin/python3 "$1" "$2" >/dev/null' \
	sh "$SEBATCH" "$P"

# remove again (from the scratch store), then the host must be unchanged
check "semodule -n -r node_agent removes the module" quiet semodule -p "$R" -n -r node_agent
check_not "node_agent no longer listed in the scratch store" \
	sh -c 'semodule -p "$1" -l | grep -qx node_agent' sh "$R"
check "host policy store and /etc/selinux unchanged" test "$(host_sum)" = "$before"
finish
