package sandbox

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// TestPolicyAssembles: the plugin's seccomp filters assemble on this
// machine's architecture. The policy named system calls amd64 has and
// arm64 does not (fork, vfork, iopl, ioperm, inotify_init), and
// go-seccomp-bpf refuses a name its architecture's table lacks: on arm64
// every plugin failed to start under the sandbox. To check another
// architecture from this one:
//
//	GOARCH=arm64 go test -c -o /tmp/sandbox-arm64.test ./internal/sandbox
//	qemu-aarch64 /tmp/sandbox-arm64.test -test.run TestPolicyAssembles -test.v
func TestPolicyAssembles(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	p := policy(info)
	insns, err := p.Assemble()
	if err != nil {
		t.Fatalf("the seccomp policy: %v", err)
	}
	if _, err := bpf.Assemble(insns); err != nil {
		t.Fatalf("the seccomp policy: %v", err)
	}
	ia := intArgFilter(info, 4242)
	if _, err := bpf.Assemble(ia); err != nil {
		t.Fatalf("the int-argument filter: %v", err)
	}
	// Each call judged: its section and the jump past it (fcntl64 only
	// where it exists).
	// A section is a load of the argument, one jump per value and two
	// returns; each call adds its own jump to the section:
	//   load of nr                                    1
	//   prctl (2 values)                   1 + 1+2+2 = 6
	//   kill (3 values)                    1 + 1+3+2 = 7
	//   tgkill, rt_sigqueueinfo,
	//   rt_tgsigqueueinfo (1 value) 3 × (1 + 1+1+2) = 15
	//   fcntl (3 values)                   1 + 1+3+2 = 7
	//   ioctl (2 values)                   1 + 1+2+2 = 6
	//   the final allow                               1
	// = 43, and 7 more for fcntl64.
	want := 43
	if _, ok := info.SyscallNames["fcntl64"]; ok {
		want += 7
	}
	if len(ia) != want {
		t.Errorf("the int-argument filter has %d instructions, want %d: calls missing from this architecture's table?", len(ia), want)
	}
	t.Logf("%d instructions and %d", len(insns), len(ia))
}
