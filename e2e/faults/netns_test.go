//go:build faults

package faults_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ipCmd and nftCmd are the iproute2 and nftables binaries (in /usr/sbin,
// which a non-login PATH may lack).
var ipCmd, nftCmd = lookSbin("ip"), lookSbin("nft")

func lookSbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if st, err := os.Stat(d + "/" + name); err == nil && !st.IsDir() {
			return d + "/" + name
		}
	}
	return ""
}

// netnsUnavailable says why the partition faults cannot run here, or "".
// They need root (network namespaces), iproute2 and nftables: this
// kernel has no netem qdisc, so loss is an nftables rule and latency a
// relay in the test process (relay below).
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces need CAP_SYS_ADMIN"
	}
	if ipCmd == "" {
		return "no `ip` (iproute2) binary"
	}
	if nftCmd == "" {
		return "no `nft` (nftables) binary: apt-get install nftables"
	}
	probe := fmt.Sprintf("mfprobe%d", os.Getpid())
	if out, err := exec.Command(ipCmd, "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("`ip netns add` fails: %v %s", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command(ipCmd, "netns", "del", probe).Run()
	if out, err := exec.Command(ipCmd, "netns", "exec", probe, nftCmd, "list", "ruleset").CombinedOutput(); err != nil {
		return fmt.Sprintf("nftables does not work in a namespace: %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// hostIPs are the namespaced hosts' addresses on the farm's bridge. They
// exist only inside the namespaces (the root namespace gets no address
// and no route), so the suite cannot disturb the machine's network.
var hostIPs = map[string]string{
	"nats": "10.77.0.1", "minio": "10.77.0.2", "co": "10.77.0.3",
	"w1": "10.77.0.4", "w2": "10.77.0.5", "obs": "10.77.0.9",
}

// netTopology is one namespace per host, each with a veth whose other end
// is on a bridge in a hub namespace.
type netTopology struct {
	prefix string
	hub    string
	ns     map[string]string
}

func setupNetns() (*netTopology, error) {
	p := fmt.Sprintf("mf%d", os.Getpid()%100000)
	n := &netTopology{prefix: p, hub: p + "-hub", ns: map[string]string{}}
	run := func(args ...string) error {
		if out, err := exec.Command(ipCmd, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	steps := [][]string{{"netns", "add", n.hub}, {"-n", n.hub, "link", "set", "lo", "up"},
		{"-n", n.hub, "link", "add", "br0", "type", "bridge"}, {"-n", n.hub, "link", "set", "br0", "up"}}
	i := 0
	for _, role := range []string{"nats", "minio", "co", "w1", "w2", "obs"} {
		i++
		ns := p + "-" + role
		n.ns[role] = ns
		h, e := fmt.Sprintf("%s-h%d", p, i), fmt.Sprintf("%s-e%d", p, i)
		steps = append(steps, []string{"netns", "add", ns}, []string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", h, "type", "veth", "peer", "name", e},
			[]string{"link", "set", h, "netns", n.hub}, []string{"link", "set", e, "netns", ns},
			[]string{"-n", ns, "link", "set", e, "name", "eth0"},
			[]string{"-n", ns, "addr", "add", hostIPs[role] + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", n.hub, "link", "set", h, "master", "br0"}, []string{"-n", n.hub, "link", "set", h, "up"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	return n, nil
}

// teardown deletes the namespaces (and with them the veths and rules).
func (n *netTopology) teardown() {
	for _, ns := range n.ns {
		_ = exec.Command(ipCmd, "netns", "del", ns).Run()
	}
	_ = exec.Command(ipCmd, "netns", "del", n.hub).Run()
}

func (n *netTopology) topology() *topology {
	t := &topology{hosts: map[string]host{}}
	for role, ns := range n.ns {
		t.hosts[role] = host{name: role, ip: hostIPs[role], ns: ns}
	}
	t.port = func(role string) int {
		switch role {
		case "nats":
			return 4222
		case "minio":
			return 9000
		}
		panic("no port for " + role)
	}
	return t
}

// nft loads an nftables script into role's namespace.
func (n *netTopology) nft(role, script string) error {
	cmd := exec.Command(ipCmd, "netns", "exec", n.ns[role], nftCmd, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %v: %s\n%s", role, err, strings.TrimSpace(string(out)), script)
	}
	return nil
}

const nftTable = `table inet faults {
	chain in { type filter hook input priority 0; policy accept; }
	chain out { type filter hook output priority 0; policy accept; }
}
`

// cut drops every packet between role and the address peer ("" = every
// packet on its link): a partition, both ways.
func (n *netTopology) cut(role, peer string) error {
	match := `iifname "eth0"`
	out := `oifname "eth0"`
	if peer != "" {
		match, out = "ip saddr "+peer, "ip daddr "+peer
	}
	return n.nft(role, nftTable+fmt.Sprintf("add rule inet faults in %s drop\nadd rule inet faults out %s drop\n", match, out))
}

// loss drops pct% of the packets on role's link, each way, at random.
func (n *netTopology) loss(role string, pct int) error {
	return n.nft(role, nftTable+fmt.Sprintf(
		"add rule inet faults in iifname \"eth0\" numgen random mod 100 < %d counter drop\n"+
			"add rule inet faults out oifname \"eth0\" numgen random mod 100 < %d counter drop\n"+
			"add rule inet faults in iifname \"eth0\" counter\nadd rule inet faults out oifname \"eth0\" counter\n", pct, pct))
}

// lossCounters returns the packets dropped and passed on role's link since
// loss was set, read from the rules' counters.
func (n *netTopology) lossCounters(role string) (dropped, passed int64, err error) {
	out, err := exec.Command(ipCmd, "netns", "exec", n.ns[role], nftCmd, "list", "table", "inet", "faults").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		i := strings.Index(line, "counter packets ")
		if i < 0 {
			continue
		}
		var p int64
		if _, err := fmt.Sscanf(line[i:], "counter packets %d", &p); err != nil {
			continue
		}
		if strings.Contains(line, "drop") {
			dropped += p
		} else {
			passed += p
		}
	}
	return dropped, passed, nil
}

// heal removes role's rules.
func (n *netTopology) heal(role string) error {
	return n.nft(role, "delete table inet faults\n")
}

// relay is a TCP forwarder that delays every chunk of data by delay in each
// direction, keeping order: with delay 100 ms it adds 200 ms to every round
// trip, as `tc qdisc add dev eth0 root netem delay 200ms` on one side of the
// link would. It stands in for netem, which this kernel lacks.
type relay struct {
	ln    net.Listener
	to    string
	delay time.Duration
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startRelay(listen, to string, delay time.Duration) (*relay, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, to: to, delay: delay}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.DialTimeout("tcp", r.to, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, u)
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(c, u)
		go r.pipe(u, c)
	}
}

type chunk struct {
	at   time.Time
	data []byte
}

// pipe copies src to dst, each chunk released delay after it was read.
func (r *relay) pipe(src, dst net.Conn) {
	defer r.wg.Done()
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			time.Sleep(time.Until(c.at.Add(r.delay)))
			if _, err := dst.Write(c.data); err != nil {
				for range q {
				}
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{at: time.Now(), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			break
		}
	}
	close(q)
	<-done
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
