// Command msjfarm-policy-cgolib serves the fcfs family from a binary that
// links a shared library of its own, libmsjfarmtest.so, found through its
// RUNPATH outside the system's library directories: a plugin wrapping a
// policy written in C or C++, built against a toolchain or environment of
// its own (/opt, a conda environment, /nix/store), is such a binary. The
// test that builds it (TestPluginLibraryOutside) writes the library and
// passes its directory in CGO_LDFLAGS.
package main

/*
#cgo LDFLAGS: -lmsjfarmtest
int msjfarmtest_answer(void);
*/
import "C"

import (
	"fmt"
	"os"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	if got := C.msjfarmtest_answer(); got != 42 {
		fmt.Fprintf(os.Stderr, "libmsjfarmtest.so answered %d, not 42\n", got)
		os.Exit(1)
	}
	sdk.Serve("fcfs", "0.1.0", fcfs.Policies)
}
