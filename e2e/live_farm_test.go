package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// TestLiveFarmNoCredentials runs a farm with secrets — a NATS password on
// the coordinator's embedded server and MinIO keys — with the coordinator
// serving the live page (-http) and a worker its metrics (-metrics), and
// checks: every page, API answer, asset, metric and health answer of both
// is free of the NATS password and the S3 keys; /readyz is ready on both,
// and the worker's turns unready when NATS goes away; the metrics count
// the campaign's tasks; and the worker's JSON task lines (-log-format json
// -v) carry campaign, task, policy and worker.
func TestLiveFarmNoCredentials(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	const password = "nats-Pw-7f3a9c21e5"
	dir := t.TempDir()
	natsAddr, coAddr, wAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	env := append(os.Environ(), "MSJFARM_STORAGE=s3://msjfarm-live?secure=false&endpoint="+ep,
		"MSJFARM_S3_ACCESS_KEY="+ak, "MSJFARM_S3_SECRET_KEY="+sk,
		"MSJFARM_NATS_USER=farm", "MSJFARM_NATS_PASSWORD="+password)
	start := func(name string, args ...string) (*exec.Cmd, *procutil.Buffer, <-chan struct{}) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, exited := startLogged(t, name, cmd, 0)
		return cmd, out, exited
	}
	co, _, _ := start("coordinator", "coordinator", "-listen", natsAddr, "-store-dir", filepath.Join(dir, "nats"), "-http", coAddr)
	coURL := "http://" + coAddr + "/"
	waitFor(t, "the coordinator's /readyz", 60*time.Second, func() bool {
		code, _ := httpGetQuiet(coURL + "readyz")
		return code == 200
	})
	natsURL := "nats://" + natsAddr
	_, wOut, wExited := start("worker", "worker", "-nats-url", natsURL, "-workers", "2", "-runner", "inprocess",
		"-metrics", wAddr, "-log-format", "json", "-v")
	wURL := "http://" + wAddr + "/"
	waitFor(t, "the worker's /readyz", 60*time.Second, func() bool {
		select {
		case <-wExited:
			t.Fatal("the worker exited while starting")
		default:
		}
		code, _ := httpGetQuiet(wURL + "readyz")
		return code == 200
	})
	sw := filepath.Join(dir, "s.yaml")
	const tasks = 8
	if err := os.WriteFile(sw, []byte(`name: live-farm
seed: 4
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, msf]
replications: 2
run: {arrivals: 5e3, warmup: 5e2, deadline: 5m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// submit -wait waits for the campaign as long as it takes: stop it if
	// the worker exits, or after a generous ceiling, so that a lost worker
	// fails here with the processes' output instead of hanging the run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-wExited:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := exec.CommandContext(ctx, bin, "submit", "-nats-url", natsURL, "-wait", sw)
	cmd.Env = env
	subOut, err := cmd.CombinedOutput()
	select {
	case <-wExited:
		t.Fatalf("the worker exited before the campaign ended (submit: %v)\n%s", err, subOut)
	default:
	}
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, subOut)
	}
	m := regexp.MustCompile(`campaign ([0-9a-f]+) `).FindSubmatch(subOut)
	if m == nil {
		t.Fatalf("no campaign id in %s", subOut)
	}
	id := string(m[1])

	// Everything both servers answer.
	var camp struct {
		State  string `json:"state"`
		Done   int    `json:"done"`
		Report string `json:"report"`
	}
	waitFor(t, "the page to link the report", 30*time.Second, func() bool {
		_, body := httpGetQuiet(coURL + "api/campaigns/" + id)
		return json.Unmarshal([]byte(body), &camp) == nil && camp.Report != ""
	})
	if camp.State != "done" || camp.Done != tasks {
		t.Fatalf("campaign %+v", camp)
	}
	pages := map[string]string{}
	for _, u := range []string{coURL, coURL + "assets/app.js", coURL + "assets/chart.js", coURL + "assets/style.css",
		coURL + "api/campaigns", coURL + "api/campaigns/" + id, coURL + "metrics", coURL + "healthz", coURL + "readyz",
		"http://" + coAddr + camp.Report, wURL, wURL + "metrics", wURL + "healthz", wURL + "readyz"} {
		code, body := httpGet(t, u)
		if code != 200 {
			t.Errorf("GET %s: %d %s", u, code, body)
		}
		pages[u] = body
	}
	for u, body := range pages {
		for what, secret := range map[string]string{"NATS password": password, "S3 access key": ak, "S3 secret key": sk} {
			if strings.Contains(body, secret) {
				t.Errorf("%s exposes the %s", u, what)
			}
		}
	}
	if !strings.Contains(pages[coURL+"api/campaigns/"+id], `"mean_response"`) {
		t.Error("the campaign JSON has no mean_response plot")
	}
	cm := parseMetrics(t, pages[coURL+"metrics"])
	if v := metricValue(t, cm, "msjfarm_tasks", "state", "done"); v != tasks {
		t.Errorf("coordinator msjfarm_tasks{done} = %v, want %d", v, tasks)
	}
	if v := metricValue(t, cm, "msjfarm_storage_write_seconds", "op", "put"); v == 0 {
		t.Error("the coordinator's storage writes (spec, summary, report) are not timed")
	}
	wm := parseMetrics(t, pages[wURL+"metrics"])
	if v := metricValue(t, wm, "msjfarm_worker_tasks_total", "outcome", "done"); v != tasks {
		t.Errorf("worker msjfarm_worker_tasks_total{done} = %v, want %d", v, tasks)
	}
	if v := metricValue(t, wm, "msjfarm_replication_wall_seconds"); v != tasks {
		t.Errorf("worker wall-time histogram count = %v, want %d", v, tasks)
	}

	// Structured task lines.
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(wOut.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l["msg"] != "task done" {
			continue
		}
		lines++
		for _, k := range []string{"campaign", "task", "policy", "worker"} {
			if s, _ := l[k].(string); s == "" {
				t.Errorf("task line without %s: %s", k, sc.Text())
			}
		}
		if l["campaign"] != id {
			t.Errorf("task line of campaign %v, want %s", l["campaign"], id)
		}
	}
	if lines != tasks {
		t.Errorf("%d JSON \"task done\" lines, want %d", lines, tasks)
	}
	if strings.Contains(wOut.String(), password) || strings.Contains(wOut.String(), sk) {
		t.Error("the worker's log shows a secret")
	}

	// NATS gone (the coordinator ran the embedded server): the worker is
	// alive but not ready.
	_ = co.Process.Kill()
	waitFor(t, "the worker's /readyz to turn 503", 30*time.Second, func() bool {
		code, _ := httpGetQuiet(wURL + "readyz")
		return code == 503
	})
	if code, _ := httpGetQuiet(wURL + "healthz"); code != 200 {
		t.Errorf("worker /healthz without NATS: %d", code)
	}
}

func httpGetQuiet(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, fmt.Sprint(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
