# SPDX-License-Identifier: BSD-2-Clause
# Sourced by run-launch and run-slurm: job runner and counters.
# The caller sets failures=0 and missing=().

# sanitizer builds: leaks inside libpmix are not rcx's
launch_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LSAN_OPTIONS="suppressions=$launch_here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

required() {
	[ -n "${RCX_REQUIRE_DEVICE:-}" ] && [ "$RCX_REQUIRE_DEVICE" != 0 ]
}

# run_job NAME EXPECT [--status S] CMD...: run, show the output, count
# "ok" lines; pass when EXPECT ranks said ok and the exit status is S
# (default 0). job_out and job_status hold the output and status after.
run_job() {
	local name=$1 expect=$2 want=0 oks
	shift 2
	if [ "$1" = --status ]; then
		want=$2
		shift 2
	fi
	echo "== $name: $*"
	job_out=$("$@" 2>&1)
	job_status=$?
	printf '%s\n' "$job_out"
	oks=$(printf '%s\n' "$job_out" | grep -c ' ok$')
	if [ "$job_status" -ne "$want" ] || [ "$oks" -ne "$expect" ]; then
		echo "FAIL $name: exit status $job_status (expected $want)," \
			"$oks of $expect ranks ok"
		failures=$((failures + 1))
		return 1
	fi
	echo "PASS $name"
}

# free_port: a TCP port that no socket of this machine holds, picked at
# random in 20000-52767 (checked against /proc/net/tcp and tcp6)
free_port() {
	local used=" " local p
	while read -r _ local _; do
		used+="$((16#${local##*:})) "
	done < <(tail -q -n +2 /proc/net/tcp /proc/net/tcp6 2>/dev/null)
	for _ in $(seq 100); do
		p=$((20000 + RANDOM))
		case $used in
		*" $p "*) ;;
		*)
			echo "$p"
			return 0
			;;
		esac
	done
	return 1
}

# no_device: exit 77 (skip), or 1 when RCX_REQUIRE_DEVICE is set
no_device() {
	if required; then
		echo "FAIL: no RDMA device, and RCX_REQUIRE_DEVICE is set" >&2
		exit 1
	fi
	echo "SKIP: no RDMA device (run it under tools/softroce)" >&2
	exit 77
}

# finish WHAT: the summary line and the exit status
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$1: $failures job(s) failed"
		exit 1
	fi
	if [ ${#missing[@]} -ne 0 ]; then
		if required; then
			echo "FAIL: $1 could not run all jobs: ${missing[0]}," \
				"and RCX_REQUIRE_DEVICE is set"
			exit 1
		fi
		echo "SKIP: $1 could not run all jobs: ${missing[0]}"
		exit 77
	fi
	echo "$1: all jobs passed"
}
