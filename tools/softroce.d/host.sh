# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Host mode of tools/softroce (sourced by it): where the running kernel has
# rdma_rxe, make rxe0 on the host itself and run the command directly.
#
# Several runs may share one rxe0.  $CACHE/host.lock serialises creating and
# removing it; every run holds a shared lock on $CACHE/host.users while its
# command runs, and the last one out (the one that gets the lock
# exclusively) removes what $CACHE/host.created says a run created.

# host_rxe_available: true if this kernel can create an rxe device.
host_rxe_available() {
	[[ -d /sys/module/rdma_rxe ]] && return 0
	command -v modprobe >/dev/null || return 1
	if ((EUID == 0)); then
		modprobe -q rdma_rxe 2>/dev/null
	else
		command -v sudo >/dev/null && sudo -n modprobe -q rdma_rxe 2>/dev/null
	fi
}

# default_netdev: the interface of the default IPv4 route.
default_netdev() {
	ip -4 route show default 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }'
}

# host_rxe_ready: rxe0's port is active and has an IPv4-mapped GID.
host_rxe_ready() {
	local port=/sys/class/infiniband/$RXE/ports/1 state gid
	read -r state <"$port/state" 2>/dev/null || return 1
	read -r gid <"$port/gids/1" 2>/dev/null || return 1
	[[ $state == *ACTIVE && $gid == 0000:0000:0000:0000:0000:ffff:* ]]
}

# host_setup: create rxe0 unless it exists; set HOST_NETDEV and HOST_ADDR.
host_setup() {
	local i dev made_dummy
	mkdir -p -- "$CACHE"
	exec {HOST_LOCK_FD}>>"$CACHE/host.lock"
	exec {HOST_USERS_FD}>>"$CACHE/host.users"
	flock "$HOST_LOCK_FD"
	flock -s "$HOST_USERS_FD"
	if [[ ! -e /sys/class/infiniband/$RXE ]]; then
		as_root modprobe -a rdma_rxe rdma_ucm ||
			die "modprobe rdma_rxe rdma_ucm failed"
		# A dummy netdev is preferred: rdma_cm refuses 127/8 on lo.
		made_dummy=0
		if [[ ! -e /sys/class/net/$NETDEV ]]; then
			as_root modprobe -q dummy 2>/dev/null || true
			as_root ip link add "$NETDEV" type dummy 2>/dev/null &&
				made_dummy=1
			((!made_dummy)) || as_root ip link set "$NETDEV" mtu "$MTU" ||
				say "warning: cannot set the MTU of $NETDEV to $MTU"
		fi
		if [[ -e /sys/class/net/$NETDEV ]]; then
			dev=$NETDEV
			as_root ip addr replace "$ADDR/24" dev "$NETDEV"
			as_root ip link set "$NETDEV" up
		else
			dev=$(default_netdev)
			[[ -n $dev ]] || die "no dummy netdev and no default route"
		fi
		as_root rdma link add "$RXE" type rxe netdev "$dev" ||
			die "rdma link add $RXE type rxe netdev $dev failed"
		printf '%s\n' "$made_dummy" >"$CACHE/host.created"
		verbose "created $RXE on $dev"
	fi
	for ((i = 0; i < 100; i++)); do
		host_rxe_ready && break
		sleep 0.1
	done
	host_rxe_ready || say "warning: $RXE is not active yet"
	HOST_NETDEV=$(rdma link show "$RXE/1" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
	HOST_ADDR=$(ip -4 -o addr show dev "${HOST_NETDEV:-$NETDEV}" 2>/dev/null |
		awk '{ sub("/.*", "", $4); print $4; exit }')
	flock -u "$HOST_LOCK_FD"
}

# host_teardown: the last run out removes the rxe0 and dummy it made.
host_teardown() {
	local made_dummy
	[[ -n ${HOST_LOCK_FD:-} ]] || return 0
	flock "$HOST_LOCK_FD"
	if flock -n "$HOST_USERS_FD" && [[ -f $CACHE/host.created ]]; then
		IFS= read -r made_dummy <"$CACHE/host.created" || true
		as_root rdma link delete "$RXE" || say "warning: cannot remove $RXE"
		if [[ $made_dummy == 1 ]]; then
			as_root ip link delete "$NETDEV" || true
		fi
		rm -f -- "$CACHE/host.created"
		verbose "removed $RXE"
	fi
	exec {HOST_USERS_FD}>&- {HOST_LOCK_FD}>&-
	HOST_LOCK_FD=''
}

# run_host CMD...: run CMD on the host with rxe0 present; exit with its
# status.
run_host() {
	local status=0
	ensure_packages "${HOST_PACKAGES[@]}"
	host_setup
	verbose "host mode: $RXE on ${HOST_NETDEV:-?} (${HOST_ADDR:-no IPv4})"
	RCX_SOFTROCE_DEV=$RXE RCX_SOFTROCE_NETDEV=${HOST_NETDEV:-} \
		RCX_SOFTROCE_ADDR=${HOST_ADDR:-} RCX_SOFTROCE_MODE=host \
		"$@" || status=$?
	host_teardown
	exit "$status"
}
