package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// privateRoot makes this process's root directory a fresh, read-only
// tmpfs that holds only what the plugin may use, each at its own path:
// the read-only paths ro (the system libraries and the loader of a
// dynamically linked binary), the read-write directories rw (its private
// TMPDIR, --plugin-writable) and /dev/null. A path that is a symbolic link
// is recreated as the same link. Nothing else of the machine's file
// systems is reachable from the plugin: not by opening (which Landlock
// refuses too, where the kernel has it), and not by stat, which Landlock
// does not govern — a confined plugin could learn whether any path
// existed, its size, owner and times. Where the kernel has no Landlock
// this is the plugin's only file confinement.
//
// It needs a mount namespace of its own (CLONE_NEWNS, from launcherAttr)
// and the capability to mount in it (root, or the launcher's ambient
// CAP_SYS_ADMIN in its user namespace), and the mount API of Linux 5.12
// (open_tree, move_mount, mount_setattr). The binary itself is not in the
// root: the launcher executes it from a descriptor.
func privateRoot(ro, rw []string) error {
	// No mount or unmount here propagates to the machine's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private root: making mounts private: %v", err)
	}
	root, err := newTmpfs()
	if err != nil {
		return err
	}
	defer unix.Close(root)
	type bind struct {
		path     string
		writable bool
	}
	var binds []bind
	for _, p := range ro {
		binds = append(binds, bind{filepath.Clean(p), false})
	}
	for _, p := range rw {
		binds = append(binds, bind{filepath.Clean(p), true})
	}
	binds = append(binds, bind{"/dev/null", true})
	// Parents before what they contain; the read-write after the
	// read-only of the same length, so that a writable directory inside
	// a read-only one is bound on top of it.
	slices.SortStableFunc(binds, func(a, b bind) int { return len(a.path) - len(b.path) })
	for _, b := range binds {
		if !filepath.IsAbs(b.path) || b.path == "/" {
			return fmt.Errorf("private root: %q: want an absolute path below /", b.path)
		}
		if err := place(root, b.path, b.writable); err != nil {
			return fmt.Errorf("private root: %s: %v", b.path, err)
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(root, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("private root: making it read-only: %v", err)
	}
	return pivot(root)
}

// newTmpfs is a detached tmpfs mount, small (it holds directories, links
// and mount points only), as a descriptor of its root.
func newTmpfs() (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("private root: tmpfs: %v", err)
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"mode", "0755"}, {"size", "1m"}, {"nr_inodes", "4096"}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("private root: tmpfs %s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("private root: tmpfs: %v", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("private root: tmpfs: %v", err)
	}
	return m, nil
}

// place makes path in the new root (root, a descriptor of it) what it is
// on the machine: the same symbolic link, or a bind mount of the file or
// directory (read-only unless writable). A path already there through an
// earlier one (a file in a bound directory, a path through a link) is
// left as it is, unless it must be writable and is not. A path missing on
// the machine is skipped, as Landlock's rules skip it.
func place(root int, path string, writable bool) error {
	rel := strings.TrimPrefix(path, "/")
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if fd, err := inRoot(root, rel); err == nil {
		defer unix.Close(fd)
		if !writable {
			return nil
		}
		return bindOnto(path, fd, true)
	}
	dir, err := mkdirAllIn(root, filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	base := filepath.Base(rel)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		return unix.Symlinkat(target, dir, base)
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dir, base, 0o755); err != nil {
			return err
		}
	default:
		fd, err := unix.Openat(dir, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	fd, err := inRoot(dir, base)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return bindOnto(path, fd, writable)
}

// inRoot opens rel as a path inside root (symbolic links resolved as if
// root were /, never out of it), O_PATH.
func inRoot(root int, rel string) (int, error) {
	return unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
}

// mkdirAllIn opens directory rel of the new root, creating what is
// missing; it refuses to create one outside the tmpfs itself (inside a
// bound directory, which is the machine's file system).
func mkdirAllIn(root int, rel string) (int, error) {
	if rel == "." || rel == "" {
		return unix.Dup(root)
	}
	if fd, err := inRoot(root, rel); err == nil {
		return fd, nil
	}
	parent, err := mkdirAllIn(root, filepath.Dir(rel))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	var ps, rs unix.Stat_t
	if err := unix.Fstat(parent, &ps); err != nil {
		return -1, err
	}
	if err := unix.Fstat(root, &rs); err != nil {
		return -1, err
	}
	if ps.Dev != rs.Dev {
		return -1, fmt.Errorf("/%s would be made inside a bound directory, on the machine's file system", rel)
	}
	if err := unix.Mkdirat(parent, filepath.Base(rel), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return inRoot(root, rel)
}

// bindOnto clones the mount of path, with the mounts below it, and
// attaches the clone onto target (an O_PATH descriptor in the new root).
// With them: in a user namespace the kernel refuses to clone a mount
// without the mounts it holds below the path (they may hide what is under
// them), and what is at a path is what the plugin should see there.
func bindOnto(path string, target int, writable bool) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("cloning its mount: %v", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if path == "/dev/null" {
		attr.Attr_set = unix.MOUNT_ATTR_NOSUID
	}
	if !writable {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("setting its mounts' attributes: %v", err)
	}
	if err := unix.MoveMount(tree, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching it: %v", err)
	}
	return nil
}

// pivot attaches the detached root on top of the old one and makes it
// this process's root, the old root then detached from this namespace.
func pivot(root int) error {
	// On top of "/": any directory of the old root would do, since it is
	// this namespace's only and goes with the old root; "/" always exists.
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, "/", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("private root: attaching it: %v", err)
	}
	if err := unix.Fchdir(root); err != nil {
		return fmt.Errorf("private root: %v", err)
	}
	// pivot_root(".", "."): the old root ends up mounted on top of the
	// new one, and is then detached.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("private root: pivot_root: %v", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("private root: detaching the old root: %v", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("private root: %v", err)
	}
	return nil
}
