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
	p, err := policy()
	if err != nil {
		t.Fatal(err)
	}
	insns, err := p.Assemble()
	if err != nil {
		t.Fatalf("the seccomp policy: %v", err)
	}
	if _, err := bpf.Assemble(insns); err != nil {
		t.Fatalf("the seccomp policy: %v", err)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	ia := intArgFilter(info, 4242)
	if _, err := bpf.Assemble(ia); err != nil {
		t.Fatalf("the int-argument filter: %v", err)
	}
	// Each call judged: its section and the jump past it (fcntl64 only
	// where it exists).
	if len(ia) < 30 {
		t.Errorf("the int-argument filter has %d instructions: calls missing from this architecture's table?", len(ia))
	}
	t.Logf("%d instructions and %d", len(insns), len(ia))
}
