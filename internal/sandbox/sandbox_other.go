//go:build !linux

package sandbox

// Landlock and seccomp are Linux's: elsewhere New reports them missing,
// and plugins run as with --plugin-sandbox off.
func probe() (landlockABI int, seccompOK bool) { return 0, false }

func libraries(string) (string, []string) { return "", nil }
