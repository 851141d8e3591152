# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Packages and the kernel cache of tools/softroce (sourced by it).
#
# Layout of $CACHE:
#   lock                  flock(1) lock for every change below
#   apt.log               output of the last apt-get run
#   debs/*.deb            the kernel packages as downloaded
#   kernels/PKG_VERSION/  one prepared kernel: tree/ (the unpacked .deb with
#                         modules.dep), vmlinux, kver, initrd-HASH.cpio, ready
#   current               the name of the kernel directory in use
#   runs/                 per-run directories (removed after each run)
# Each kernel directory is built under a temporary name and renamed into
# place, so a directory with a "ready" file is always complete.

# Packages the host needs; the guest runs the host's own programs.
HOST_PACKAGES=(kmod iproute2 rdma-core ibverbs-providers ibverbs-utils
	rdmacm-utils)
# shellcheck disable=SC2034 # used by tools/softroce
VM_PACKAGES=("${HOST_PACKAGES[@]}" qemu-system-x86 busybox-static xz-utils
	cpio)

# Modules loaded by stage 1, before the root file system exists.
STAGE1_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

cache_lock() {
	mkdir -p -- "$CACHE"
	exec {CACHE_LOCK_FD}>>"$CACHE/lock"
	flock "$CACHE_LOCK_FD"
}

cache_unlock() {
	exec {CACHE_LOCK_FD}>&-
}

# as_root CMD...: run CMD as root, through sudo when needed.
as_root() {
	if ((EUID == 0)); then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo -- "$@"
	else
		die "root is needed to run: $*"
	fi
}

apt_get() {
	as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
		-o DPkg::Lock::Timeout=600 "$@" >>"$CACHE/apt.log" 2>&1
}

# missing_packages PKG...: print the packages that are not installed.
missing_packages() {
	local -A ok=()
	local pkg status
	while read -r pkg status; do
		[[ $status == ii ]] && ok[$pkg]=1
	done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "$@" \
		2>/dev/null || true)
	for pkg; do
		[[ -n ${ok[$pkg]:-} ]] || printf '%s\n' "$pkg"
	done
}

# ensure_packages PKG...: install what is missing, under the cache lock.
ensure_packages() {
	local -a missing
	mapfile -t missing < <(missing_packages "$@")
	((${#missing[@]})) || return 0
	cache_lock
	mapfile -t missing < <(missing_packages "$@")
	if ((${#missing[@]})); then
		say "installing ${missing[*]}"
		: >"$CACHE/apt.log"
		if ! apt_get install --no-install-recommends "${missing[@]}"; then
			apt_get update || true
			apt_get install --no-install-recommends "${missing[@]}" || {
				tail -n 20 -- "$CACHE/apt.log" >&2
				die "apt-get install failed (log: $CACHE/apt.log)"
			}
		fi
	fi
	cache_unlock
}

# resolve_kernel: set KPKG and KVERSION from linux-image-amd64's dependency.
resolve_kernel() {
	local try
	KPKG='' KVERSION=''
	for try in 1 2; do
		KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
		[[ -n $KPKG ]] && break
		((try == 1)) && { apt_get update || true; }
	done
	[[ -n $KPKG ]] || return 1
	KVERSION=$(apt-cache show --no-all-versions "$KPKG" 2>/dev/null |
		awk '$1 == "Version:" { print $2; exit }')
	[[ -n $KVERSION ]]
}

# fetch_kernel: set KKEY and make sure the .deb of $KPKG=$KVERSION is in
# the cache (unless that kernel is prepared already).  Returns non-zero
# when the download fails.  Called with the cache lock held.
fetch_kernel() {
	local tmp deb
	local -a opts=()
	KKEY=${KPKG}_${KVERSION//:/%3a}
	[[ -f $CACHE/kernels/$KKEY/ready ]] && return 0
	mkdir -p -- "$CACHE/debs"
	[[ -n $(find "$CACHE/debs" -maxdepth 1 -name "${KKEY}_*.deb") ]] &&
		return 0
	say "downloading $KPKG $KVERSION"
	((EUID == 0)) && opts=(-o APT::Sandbox::User=root)
	tmp=$(mktemp -d -- "$CACHE/debs/.new.XXXXXX") || return 1
	if ! (cd -- "$tmp" && apt-get -q "${opts[@]}" download \
		"$KPKG=$KVERSION") >>"$CACHE/apt.log" 2>&1; then
		rm -rf -- "$tmp"
		return 1
	fi
	deb=$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n 1)
	[[ -n $deb ]] && mv -- "$deb" "$CACHE/debs/"
	rm -rf -- "$tmp"
	[[ -n $deb ]]
}

# unpack_kernel: prepare $CACHE/kernels/$KKEY from its .deb and make it the
# current kernel.  Called with the cache lock held.
unpack_kernel() {
	local dir tmp deb kver
	dir=$CACHE/kernels/$KKEY
	mkdir -p -- "$CACHE/kernels"
	# Leftovers of runs that were killed while holding the lock.
	rm -rf -- "$CACHE"/kernels/.new.* "$CACHE"/debs/.new.*
	if [[ ! -f $dir/ready ]]; then
		say "preparing kernel $KKEY"
		deb=$(find "$CACHE/debs" -maxdepth 1 -name "${KKEY}_*.deb" |
			head -n 1)
		tmp=$(mktemp -d -- "$CACHE/kernels/.new.XXXXXX")
		chmod 0755 "$tmp"
		dpkg-deb -x "$deb" "$tmp/tree"
		# Newer packages ship /usr/lib/modules only; depmod -b wants lib/.
		if [[ ! -d $tmp/tree/lib/modules && -d $tmp/tree/usr/lib/modules ]]; then
			ln -s usr/lib "$tmp/tree/lib"
		fi
		kver=$(find "$tmp/tree/lib/modules/" -mindepth 1 -maxdepth 1 \
			-printf '%f\n' | head -n 1)
		[[ -n $kver && -f $tmp/tree/boot/vmlinuz-$kver ]] ||
			die "unexpected layout in $deb"
		# The package ships no modules.dep.
		depmod -b "$tmp/tree" "$kver"
		"$SOFTROCE_DIR/extract-vmlinux" "$tmp/tree/boot/vmlinuz-$kver" \
			"$tmp/vmlinux"
		printf '%s\n' "$kver" >"$tmp/kver"
		: >"$tmp/ready"
		rm -rf -- "$dir"
		mv -T -- "$tmp" "$dir"
	fi
	printf '%s\n' "$KKEY" >"$CACHE/current.new"
	mv -f -- "$CACHE/current.new" "$CACHE/current"
}

# current_kernel: set KDIR and KVER if the cache has a prepared kernel.
current_kernel() {
	local key
	[[ -f $CACHE/current ]] || return 1
	IFS= read -r key <"$CACHE/current" || return 1
	KDIR=$CACHE/kernels/$key
	[[ -f $KDIR/ready ]] || return 1
	IFS= read -r KVER <"$KDIR/kver"
}

# setup_kernel [refresh]: make sure a prepared kernel exists (with
# "refresh", re-resolve linux-image-amd64 even if one does), and set
# KDIR and KVER.  A cached kernel is used without any network access.
setup_kernel() {
	[[ ${1:-} != refresh ]] && current_kernel && return 0
	cache_lock
	if [[ ${1:-} == refresh ]] || ! current_kernel; then
		if resolve_kernel && fetch_kernel; then
			unpack_kernel
		elif current_kernel; then
			# The pinned ABI may have left the mirror; keep the old one.
			say "warning: cannot fetch the current kernel, keeping $KDIR"
		else
			tail -n 20 -- "$CACHE/apt.log" >&2 || true
			die "cannot resolve or download linux-image-amd64's kernel" \
				"(log: $CACHE/apt.log)"
		fi
	fi
	current_kernel || die "kernel preparation failed"
	cache_unlock
}

# elf_is_static FILE: true if the ELF64 FILE has no PT_INTERP header.
elf_is_static() {
	local phoff phentsize phnum type i
	read -r phoff < <(od -An -tu8 -j 32 -N 8 -- "$1")
	read -r phentsize phnum < <(od -An -tu2 -j 54 -N 4 -- "$1")
	for ((i = 0; i < phnum; i++)); do
		read -r type < <(od -An -tu4 -j $((phoff + i * phentsize)) -N 4 -- "$1")
		((type != 3)) || return 1
	done
}

# build_initrd: set INITRD to the initramfs for the current kernel and the
# current stage scripts, building it when missing.
build_initrd() {
	local sum tmp mod path kw
	sum=$(cat -- "$SOFTROCE_DIR/init" "$SOFTROCE_DIR/stage2" /bin/busybox |
		sha256sum | cut -c1-16)
	INITRD=$KDIR/initrd-$sum.cpio
	[[ -f $INITRD ]] && return 0
	cache_lock
	if [[ ! -f $INITRD ]]; then
		# A dynamically linked busybox cannot run in the initramfs.
		if ! elf_is_static /bin/busybox; then
			die "/bin/busybox is not static: install busybox-static"
		fi
		tmp=$(mktemp -d -- "$KDIR/.initrd.XXXXXX")
		mkdir -p -- "$tmp"/{bin,dev,proc,sys,lower,upper,newroot,modules}
		install -m 0755 /bin/busybox "$tmp/bin/busybox"
		install -m 0755 -- "$SOFTROCE_DIR/init" "$tmp/init"
		install -m 0644 -- "$SOFTROCE_DIR/stage2" "$tmp/stage2"
		: >"$tmp/modules/order"
		for mod in "${STAGE1_MODULES[@]}"; do
			while read -r kw path _; do
				[[ $kw == insmod ]] || continue
				local name=${path##*/}
				name=${name%%.ko*}.ko
				[[ -f $tmp/modules/$name ]] && continue
				case $path in
				*.ko.xz) xz -dc -- "$path" >"$tmp/modules/$name" ;;
				*.ko.zst) zstd -dcq -- "$path" >"$tmp/modules/$name" ;;
				*.ko.gz) gzip -dc -- "$path" >"$tmp/modules/$name" ;;
				*) cp -- "$path" "$tmp/modules/$name" ;;
				esac
				printf '%s\n' "$name" >>"$tmp/modules/order"
			done < <(modprobe -d "$KDIR/tree" -S "$KVER" --show-depends "$mod")
		done
		(cd -- "$tmp" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
			cpio --null -o -H newc -R 0:0 --quiet) >"$tmp.cpio"
		mv -f -- "$tmp.cpio" "$INITRD"
		rm -rf -- "$tmp"
		# Initramfs files of older stage scripts, unused for a day.
		find "$KDIR" -maxdepth 1 -name 'initrd-*.cpio' -mtime +1 -delete

	fi
	cache_unlock
}
