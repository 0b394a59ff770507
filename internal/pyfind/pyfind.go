// Package pyfind finds a Python interpreter with a given module, for the
// tests that check the project's files the way a researcher reads them
// (pandas reading the summary tables, matplotlib redrawing a figure).
package pyfind

import (
	"os"
	"os/exec"
)

// With is the first interpreter that imports module among
// $MSJFARM_PYTHON, python3 on the PATH and Debian's /usr/bin/python3
// (which a pyenv or virtualenv python3 on the PATH may hide); "" if none
// does.
func With(module string) string {
	for _, p := range []string{os.Getenv("MSJFARM_PYTHON"), "python3", "/usr/bin/python3"} {
		if p == "" {
			continue
		}
		if exec.Command(p, "-c", "import "+module).Run() == nil {
			return p
		}
	}
	return ""
}
