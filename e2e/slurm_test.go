//go:build slurm

// The Slurm test (`make slurm`): deploy/slurm/msjfarm-workers.sbatch run
// by a real Slurm — Debian's slurmctld, two slurmd and munged, installed by
// .ci/install-slurm.sh and configured here on loopback — against a real
// nats-server (or the coordinator's embedded one) and MinIO. Behind the
// slurm build tag because it needs root (slurmd starts jobs as their user)
// and takes about four minutes, most of it waiting for Slurm's 30-second
// time-limit check and for AckWait.

package e2e_test

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// slurmCluster is munged, slurmctld and two slurmd ("n1" and "n2", both on
// 127.0.0.1 with ports of their own) started from a configuration in a
// temporary directory. Debian's Slurm is built without
// --enable-multiple-slurmd, but `slurmd -N <node>` with a distinct Port per
// NodeName gives two nodes on one host all the same: each slurmd has its own
// spool, log and pid file (%n in slurm.conf), and jobs span both.
type slurmCluster struct {
	t    *testing.T
	dir  string
	conf string   // slurm.conf
	env  []string // the test's environment and SLURM_CONF, for the commands
}

// slurmCommands are what the test runs; all come with Debian's slurmctld,
// slurmd, slurm-client and munge packages.
var slurmCommands = []string{"munged", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "scancel", "squeue", "sinfo", "scontrol"}

func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	for _, c := range slurmCommands {
		if _, err := exec.LookPath(c); err != nil {
			msg := c + " not found: run `bash .ci/install-slurm.sh` (Debian's slurmctld, slurmd, slurm-client, munge)"
			if os.Getenv(natstest.EnvRequireServers) == "1" {
				t.Fatalf("%s (%s=1, so this is an error)", msg, natstest.EnvRequireServers)
			}
			t.Skip(msg)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("slurmd must run as root to start jobs")
	}
	// Not t.TempDir(): munged checks that every directory above its socket
	// is searchable by all and writable by root only, and slurmstepd may
	// still be removing its spool files when the test's cleanup runs.
	dir, err := os.MkdirTemp("", "msjfarm-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{t: t, dir: dir}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"munge", "state", "spool/n1", "spool/n2", "log", "jobs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// MUNGE: a fresh key, a socket of our own.
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "munge.socket")
	_, mungeExited := startLogged(t, "munged", exec.Command("munged", "--foreground", "--force",
		"--socket="+sock, "--key-file="+keyFile, "--log-file="+filepath.Join(dir, "log", "munged.log"),
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--seed-file="+filepath.Join(dir, "munge", "seed")), time.Second)
	waitFor(t, "munged to answer", 30*time.Second, func() bool {
		select {
		case <-mungeExited:
			t.Fatal("munged exited")
		default:
		}
		cred, err := exec.Command("munge", "-n", "-S", sock).Output()
		if err != nil {
			return false
		}
		cmd := exec.Command("unmunge", "-S", sock)
		cmd.Stdin = strings.NewReader(string(cred))
		return cmd.Run() == nil
	})

	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = procutil.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".") // slurmctld compares SlurmctldHost with the short name
	// Slurm's defaults, except: root runs everything; no cgroups (process
	// tracking by the process tree), no accounting, no MPI; the two nodes'
	// declared CPUs may differ from the hardware (config_overrides); a
	// killed job's processes get SIGKILL 10 s after SIGTERM (KillWait,
	// default 30 s); finished jobs stay visible to scontrol for 5 minutes.
	conf := fmt.Sprintf(`ClusterName=msjfarmtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[6]s
StateSaveLocation=%[7]s/state
SlurmdSpoolDir=%[7]s/spool/%%n
SlurmctldPidFile=%[7]s/slurmctld.pid
SlurmdPidFile=%[7]s/slurmd-%%n.pid
SlurmctldLogFile=%[7]s/log/slurmctld.log
SlurmdLogFile=%[7]s/log/slurmd-%%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
MinJobAge=300
InactiveLimit=0
NodeName=n1 NodeHostname=n1 NodeAddr=127.0.0.1 Port=%[4]d CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=n2 NodeAddr=127.0.0.1 Port=%[5]d CPUs=2 State=UNKNOWN
PartitionName=farm Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
`, host, ports[0], ports[1], ports[2], ports[3], sock, dir)
	confFile := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.conf = confFile
	c.env = append(os.Environ(), "SLURM_CONF="+confFile)

	daemon := func(name string, args ...string) <-chan struct{} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = c.env
		_, exited := startLogged(t, name, cmd, 10*time.Second)
		return exited
	}
	ctld := daemon("slurmctld", "slurmctld", "-D", "-i")
	d1 := daemon("slurmd n1", "slurmd", "-D", "-N", "n1")
	d2 := daemon("slurmd n2", "slurmd", "-D", "-N", "n2")
	waitFor(t, "both Slurm nodes to be idle", 60*time.Second, func() bool {
		for name, ch := range map[string]<-chan struct{}{"slurmctld": ctld, "slurmd n1": d1, "slurmd n2": d2} {
			select {
			case <-ch:
				t.Fatalf("%s exited; logs in %s", name, filepath.Join(dir, "log"))
			default:
			}
		}
		out, err := c.run("sinfo", "-h", "-N", "-o", "%N %t")
		return err == nil && strings.Count(out, " idle") == 2
	})
	// Registered after the daemons, so it runs before they stop: a job's
	// processes (slurmstepd and its tasks) outlive slurmd, so every job is
	// cancelled and gone first.
	t.Cleanup(func() {
		out, _ := c.run("squeue", "-h", "-o", "%A")
		for _, id := range strings.Fields(out) {
			_, _ = c.run("scancel", id)
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if out, err := c.run("squeue", "-h", "-o", "%A"); err == nil && strings.TrimSpace(out) == "" {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if t.Failed() {
			for _, l := range []string{"slurmctld.log", "slurmd-n1.log", "slurmd-n2.log"} {
				data, _ := os.ReadFile(filepath.Join(dir, "log", l))
				t.Logf("--- %s:\n%s", l, tail(string(data), 40))
			}
		}
	})
	return c
}

func (c *slurmCluster) run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// sbatch submits the repository's batch script with the environment env
// (sbatch passes its whole environment on to the job) and returns the job
// id; the job's output goes to jobs/slurm-<id>.out.
func (c *slurmCluster) sbatch(env []string, args ...string) string {
	c.t.Helper()
	root, err := hosttest.RepoRoot()
	if err != nil {
		c.t.Fatal(err)
	}
	args = append([]string{"--parsable", "--chdir", filepath.Join(c.dir, "jobs"),
		"--output", filepath.Join(c.dir, "jobs", "slurm-%j.out")}, args...)
	cmd := exec.Command("sbatch", append(args, filepath.Join(root, "deploy", "slurm", "msjfarm-workers.sbatch"))...)
	cmd.Env = append(append([]string{}, env...), "SLURM_CONF="+c.conf)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("sbatch: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("--- job %s output:\n%s", id, c.output(id))
		}
	})
	return id
}

func (c *slurmCluster) output(id string) string {
	data, _ := os.ReadFile(filepath.Join(c.dir, "jobs", "slurm-"+id+".out"))
	return string(data)
}

var jobStateRE = regexp.MustCompile(`\bJobState=(\S+)`)

// state is the job's JobState (PENDING, RUNNING, COMPLETED, CANCELLED,
// TIMEOUT, ...).
func (c *slurmCluster) state(id string) string {
	out, err := c.run("scontrol", "-o", "show", "job", id)
	if err != nil {
		return ""
	}
	if m := jobStateRE.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

func (c *slurmCluster) waitRunning(id string) {
	c.t.Helper()
	waitFor(c.t, "job "+id+" to run on both nodes", 60*time.Second, func() bool {
		return c.state(id) == "RUNNING" && strings.Count(c.output(id), ": 1 slots, NATS") == 2
	})
}

// endStates are Slurm's final job states; a job may pass through others
// (COMPLETING, and SIGNALING while --signal is delivered) on its way.
var endStates = []string{"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
	"BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}

// waitEnded waits for the job to leave the queue and returns its final state.
func (c *slurmCluster) waitEnded(id string, d time.Duration) string {
	c.t.Helper()
	var s string
	waitFor(c.t, "job "+id+" to end", d, func() bool {
		s = c.state(id)
		return slices.Contains(endStates, s)
	})
	return s
}

var workerStartRE = regexp.MustCompile(`msjfarm worker (\S+): \d+ slots`)

// killWorkers SIGKILLs the workers of job id, found by the pid their
// default name ends with (<hostname>-<pid>, printed as they start) and
// checked to be msjfarm workers, and returns their names.
func (c *slurmCluster) killWorkers(id string) []string {
	c.t.Helper()
	var names []string
	for _, name := range c.workers(id) {
		pid, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
		if err != nil {
			c.t.Fatalf("worker name %q does not end with its pid", name)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), "worker\x00") {
			c.t.Fatalf("worker %s: process %d is not an msjfarm worker (%q, %v)", name, pid, cmdline, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			c.t.Fatal(err)
		}
		names = append(names, name)
	}
	if len(names) != 2 {
		c.t.Fatalf("job %s: killed %d workers, want 2", id, len(names))
	}
	return names
}

// workers are the names of job id's workers, as they printed them.
func (c *slurmCluster) workers(id string) []string {
	var names []string
	for _, m := range workerStartRE.FindAllStringSubmatch(c.output(id), -1) {
		names = append(names, m[1])
	}
	return names
}

// checkOnceAcrossKills is checkExactlyOnce for campaigns whose workers
// were killed: every task has one successful result and completed at most
// once in the run log; a task with no "done" line has a result stored by a
// killed worker, killed after it stored the result and before it logged
// it (the next delivery finds the result and acks without running).
func checkOnceAcrossKills(t *testing.T, recs map[string]*record.Record, rl runLog, tasks int, killed []string) {
	t.Helper()
	if len(recs) != tasks {
		t.Fatalf("%d results in storage, want %d", len(recs), tasks)
	}
	for tid, r := range recs {
		if r.Failed() {
			t.Fatalf("task %s failed: %s", tid, r.Error)
		}
		switch n := len(rl["done"][tid]); {
		case n > 1:
			t.Fatalf("task %s completed %d times (run log): %v", tid, n, rl["done"][tid])
		case n == 0 && !slices.Contains(killed, r.Provenance.Worker):
			t.Fatalf("task %s: no completion in the run log, and its result is by %s, which was not killed", tid, r.Provenance.Worker)
		case n == 1 && rl["done"][tid][0] != r.Provenance.Worker:
			t.Fatalf("task %s: completed by %s, its result is by %s", tid, rl["done"][tid][0], r.Provenance.Worker)
		}
	}
}

var workerStopRE = regexp.MustCompile(`msjfarm worker (\S+): stopped \((\d+) done, (\d+) failed, (\d+) released\)`)

// campaignRunLog is the run log's lines of one campaign (the workers of
// every allocation append to the same file).
func campaignRunLog(t *testing.T, path, id string) runLog {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 5 && fs[1] == id {
			keep.WriteString(sc.Text() + "\n")
		}
	}
	p := filepath.Join(t.TempDir(), "runs-"+id+".log")
	if err := os.WriteFile(p, []byte(keep.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return readRunLog(t, p)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestSlurmAllocation runs the batch script as a university user would,
// workers only (NATS, MinIO and the coordinator run outside the
// allocation), through four allocations of two nodes with one slot each:
//
//  1. a campaign runs to completion; then the job's time limit is lowered
//     to one minute, so that Slurm itself sends the script's
//     `--signal=B:TERM@120`: the workers stop and the job completes before
//     its limit instead of being killed (TIMEOUT);
//  2. a second campaign starts and the same signal is sent at once with
//     `scancel --batch --signal=TERM` (what Slurm's --signal=B: does) while
//     replications run: each finishes within -grace or is released, none
//     is abandoned;
//  3. `scancel` mid-campaign: Slurm SIGTERMs every process, srun among
//     them, which SIGKILLs its tasks — the workers — at once;
//  4. the allocation's workers SIGKILLed mid-campaign, as by the OOM
//     killer or a lost node (`scancel --signal=KILL` would not do: Slurm
//     treats it as a plain cancellation, SIGTERM first), then the job
//     cancelled: the tasks killed mid-run are redelivered after AckWait;
//  5. a new allocation resumes and finishes the campaign.
//
// Across all of it: every task has exactly one successful result and
// completed exactly once (the workers' run log), none failed.
func TestSlurmAllocation(t *testing.T) {
	sl := startSlurm(t)
	f := newFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.Build(plugins, "./plugins/fcfs/cmd/msjfarm-policy-fcfs"); err != nil {
		t.Fatal(err)
	}
	co := f.start("coordinator", "coordinator", "-ack-wait", "5s", "-reconcile", "1s")
	logPath := filepath.Join(f.dir, "runs.log")
	// The job's environment: the farm's (NATS URL, storage, S3 keys) and
	// the worker settings the script reads; MSJFARM_PLUGIN_PATH and
	// MSJFARM_RUN_LOG reach the worker as its flags' environment variables.
	env := append(append([]string{}, f.env...), "MSJFARM="+bin, "MSJFARM_PLUGIN_PATH="+plugins,
		"MSJFARM_RUN_LOG="+logPath, "MSJFARM_GRACE=20s")
	alloc := []string{"--nodes=2", "--cpus-per-task=1", "--time=10"}

	// 1. A campaign to completion, then the end-of-allocation signal from
	// Slurm's own time-limit check.
	start := time.Now()
	j1 := sl.sbatch(env, alloc...)
	sl.waitRunning(j1)
	t.Logf("allocation %s: both workers up after %v", j1, time.Since(start).Round(time.Millisecond))
	id1 := f.submit(f.writeSweep("slurm-one", 5, "2e5")) // 10 tasks of ~60 ms
	s := f.waitDone(id1, 120*time.Second)
	if s.Done != 10 || s.Failed != 0 {
		t.Fatalf("campaign 1 status %+v", s)
	}
	checkExactlyOnce(t, f.records(id1), campaignRunLog(t, logPath, id1), 10)
	workers := map[string]bool{}
	for _, r := range f.records(id1) {
		workers[r.Provenance.Worker] = true
	}
	t.Logf("campaign 1: 10 tasks done %v after sbatch, by workers %v", time.Since(start).Round(time.Millisecond), workers)
	if _, err := sl.run("scontrol", "update", "JobId="+j1, "TimeLimit=1"); err != nil {
		t.Fatal(err)
	}
	lowered := time.Now()
	if st := sl.waitEnded(j1, 150*time.Second); st != "COMPLETED" {
		t.Fatalf("allocation %s ended %s, want COMPLETED (the script stops its workers on Slurm's --signal)\n%s", j1, st, sl.output(j1))
	}
	out := sl.output(j1)
	if n := len(workerStopRE.FindAllString(out, -1)); n != 2 {
		t.Fatalf("allocation %s: %d workers stopped cleanly, want 2\n%s", j1, n, out)
	}
	t.Logf("allocation %s: time limit lowered to 1 min; Slurm's signal stopped it after %v", j1, time.Since(lowered).Round(time.Second))

	// 2. The grace path with replications running: 40 tasks of ~0.5 s.
	const tasks2 = 40
	id2 := f.submit(f.writeSweep("slurm-two", tasks2/2, "1e7"))
	j2 := sl.sbatch(env, alloc...)
	sl.waitRunning(j2)
	waitFor(t, "4 tasks of campaign 2", 120*time.Second, func() bool {
		s, err := f.status(id2)
		return err == nil && s.Done >= 4
	})
	if _, err := sl.run("scancel", "--batch", "--signal=TERM", j2); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	if st := sl.waitEnded(j2, 60*time.Second); st != "COMPLETED" {
		t.Fatalf("allocation %s ended %s after the batch shell's SIGTERM, want COMPLETED\n%s", j2, st, sl.output(j2))
	}
	t.Logf("allocation %s: stopped %v after the signal", j2, time.Since(signalled).Round(time.Millisecond))
	out = sl.output(j2)
	stops := workerStopRE.FindAllStringSubmatch(out, -1)
	if len(stops) != 2 {
		t.Fatalf("allocation %s: %d workers stopped cleanly, want 2\n%s", j2, len(stops), out)
	}
	// Every run those workers started ended in the run log (done or
	// released by them): none was cut off.
	rl := campaignRunLog(t, logPath, id2)
	for _, m := range stops {
		w := m[1]
		for tid, ws := range rl["start"] {
			started := 0
			for _, x := range ws {
				if x == w {
					started++
				}
			}
			ended := 0
			for _, kind := range []string{"done", "release", "duplicate"} {
				for _, x := range rl[kind][tid] {
					if x == w {
						ended++
					}
				}
			}
			if started != ended {
				t.Fatalf("worker %s started task %s %d times and ended it %d times: a run was abandoned", w, tid, started, ended)
			}
		}
		if m[3] != "0" {
			t.Fatalf("worker %s: %s tasks failed", w, m[3])
		}
	}
	if s, err := f.status(id2); err != nil || s.Done == tasks2 {
		t.Fatalf("campaign 2 finished within the second allocation (%+v, %v): the tasks are too short for this test, raise their arrivals", s, err)
	}

	// 3. scancel mid-campaign; 4. the workers SIGKILLed mid-campaign.
	var killed []string
	for _, kill := range []bool{false, true} {
		s, _ = f.status(id2)
		before := s.Done
		j := sl.sbatch(env, alloc...)
		sl.waitRunning(j)
		waitFor(t, "4 more tasks of campaign 2", 120*time.Second, func() bool {
			s, err := f.status(id2)
			return err == nil && s.Done >= before+4
		})
		how := "scancel"
		if kill {
			how = "SIGKILL of its workers " + strings.Join(sl.killWorkers(j), ", ") + ", then scancel"
		}
		if _, err := sl.run("scancel", j); err != nil {
			t.Fatal(err)
		}
		st := sl.waitEnded(j, 60*time.Second)
		killed = append(killed, sl.workers(j)...)
		s, _ = f.status(id2)
		if s.Done == tasks2 {
			t.Fatalf("campaign 2 finished within allocation %s: the tasks are too short for this test, raise their arrivals", j)
		}
		t.Logf("campaign 2: %d of %d done when allocation %s was ended by %s (%s)", s.Done, tasks2, j, how, st)
	}

	// 5. A new allocation resumes.
	j5 := sl.sbatch(env, alloc...)
	sl.waitRunning(j5)
	s = f.waitDone(id2, 180*time.Second)
	if s.Done != tasks2 || s.Failed != 0 {
		t.Fatalf("campaign 2 status %+v", s)
	}
	recs := f.records(id2)
	rl = campaignRunLog(t, logPath, id2)
	checkOnceAcrossKills(t, recs, rl, tasks2, killed)
	if len(rl["fail"]) != 0 || len(rl["retry"]) != 0 {
		t.Fatalf("failed runs %v, retried runs %v", rl["fail"], rl["retry"])
	}
	f.checkOutputs(id2)
	restarted := 0
	for _, ws := range rl["start"] {
		if len(ws) > 1 {
			restarted++
		}
	}
	// The SIGKILL lands while the slots run replications (they are busy
	// from the first task to the last): those tasks ran again.
	if restarted == 0 {
		t.Fatal("no task was started twice: the SIGKILL did not land mid-task, and redelivery went untested")
	}
	t.Logf("campaign 2: %d tasks exactly once over 4 allocations; %d started more than once, %d released", tasks2, restarted, len(rl["release"]))
	if _, err := sl.run("scancel", j5); err != nil {
		t.Fatal(err)
	}
	sl.waitEnded(j5, 60*time.Second)
	co.stop(t, 10*time.Second)
}

// TestSlurmEmbeddedCoordinator runs the batch script the way its header
// describes first: without MSJFARM_NATS_URL, so that it starts the
// coordinator with its embedded NATS server in the batch step, its
// JetStream store in a directory (MSJFARM_NATS_STORE, a shared file system
// on a real cluster) and results in MinIO. A campaign is submitted to
// it from outside the allocation; the allocation is cancelled mid-campaign,
// coordinator included; the next allocation's coordinator resumes the
// campaign from the store directory and its workers finish it, every task
// exactly once.
func TestSlurmEmbeddedCoordinator(t *testing.T) {
	sl := startSlurm(t)
	f := newStorageFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.Build(plugins, "./plugins/fcfs/cmd/msjfarm-policy-fcfs"); err != nil {
		t.Fatal(err)
	}
	port, err := procutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(f.dir, "runs.log")
	env := append(append([]string{}, f.env...), "MSJFARM="+bin, "MSJFARM_PLUGIN_PATH="+plugins,
		"MSJFARM_RUN_LOG="+logPath, "MSJFARM_GRACE=20s",
		fmt.Sprintf("MSJFARM_LISTEN=0.0.0.0:%d", port), "MSJFARM_NATS_STORE="+filepath.Join(f.dir, "nats"))
	alloc := []string{"--nodes=2", "--cpus-per-task=1", "--time=10"}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	f.env = append(f.env, "MSJFARM_NATS_URL="+url)

	j1 := sl.sbatch(env, alloc...)
	sl.waitRunning(j1)
	if !strings.Contains(sl.output(j1), "msjfarm: coordinator on nats://") {
		t.Fatalf("allocation %s did not start its coordinator:\n%s", j1, sl.output(j1))
	}
	// The client reconnects to the next allocation's server, on the same
	// port, for as long as the test runs.
	if f.nc, err = nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.nc.Close)
	const tasks = 24
	id := f.submit(f.writeSweep("slurm-embedded", tasks/2, "1e7"))
	waitFor(t, "4 tasks", 120*time.Second, func() bool {
		s, err := f.status(id)
		return err == nil && s.Done >= 4
	})
	if _, err := sl.run("scancel", j1); err != nil {
		t.Fatal(err)
	}
	sl.waitEnded(j1, 60*time.Second)
	first := len(campaignRunLog(t, logPath, id)["done"])
	if first == tasks {
		t.Fatal("the campaign finished within the first allocation: the tasks are too short for this test, raise their arrivals")
	}

	j2 := sl.sbatch(env, alloc...)
	sl.waitRunning(j2)
	s := f.waitDone(id, 180*time.Second)
	if s.Done != tasks || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	rl := campaignRunLog(t, logPath, id)
	checkOnceAcrossKills(t, f.records(id), rl, tasks, sl.workers(j1))
	f.checkOutputs(id)
	t.Logf("%d tasks exactly once over 2 allocations, each with its own coordinator; %d done in the first", tasks, first)
	if _, err := sl.run("scancel", j2); err != nil {
		t.Fatal(err)
	}
	sl.waitEnded(j2, 60*time.Second)
}
