# SPDX-License-Identifier: BSD-2-Clause
# Shared by tools/test and tools/demo: dependencies, configure, build.
# Source it; it defines functions only.

RCX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian/Ubuntu packages the build, the tests and Soft-RoCE need.
RCX_BUILD_PKGS=(cmake ninja-build gcc g++ pkg-config clang-format
	libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
	rdmacm-utils rdma-core libhwloc-dev libcunit1-dev libpmix-dev
	openmpi-bin perftest
	slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins
	iproute2 kmod python3 valgrind gnuplot-nox strace)

rcx_log() {
	printf '== %s\n' "$*" >&2
}

# Install what is missing (root, or sudo when available).
rcx_deps() {
	local missing=() p sudo=""
	for p in "${RCX_BUILD_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	rcx_log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# rcx_build DIR [cmake args...]: configure (once) and build.
rcx_build() {
	local dir=$1
	shift
	local gen=()
	command -v ninja >/dev/null && gen=(-G Ninja)
	if [ ! -f "$dir/CMakeCache.txt" ]; then
		cmake -S "$RCX_TOP" -B "$dir" "${gen[@]}" "$@" >/dev/null
	else
		cmake "$dir" "$@" >/dev/null
	fi
	cmake --build "$dir" -j "$(nproc)"
}
