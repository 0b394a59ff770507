package e2e_test

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Replicas *int                 `yaml:"replicas"`
		Selector yaml.Node            `yaml:"selector"`
		Ports    []struct{ Port int } `yaml:"ports"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	Containers                    []struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
				ResourceFieldRef *struct {
					Resource string `yaml:"resource"`
				} `yaml:"resourceFieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Resources struct {
			Limits map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	} `yaml:"containers"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// httpFlagPort is the port of a command's -http or -metrics flag (0 if
// none): the address the health endpoints are served on.
func httpFlagPort(args []string) int {
	for i, a := range args {
		if (a == "-http" || a == "-metrics" || a == "--http" || a == "--metrics") && i+1 < len(args) {
			if j := strings.LastIndex(args[i+1], ":"); j >= 0 {
				p, _ := strconv.Atoi(args[i+1][j+1:])
				return p
			}
		}
	}
	return 0
}

// TestKubernetesManifests checks deploy/k8s: the kustomization's resources
// exist and parse; NATS runs JetStream; there is one coordinator and a
// scalable worker Deployment; selectors match their pods' labels; every
// msjfarm container's command and flags exist and its MSJFARM_* variables
// name flags of that command; secret references resolve; the NATS and S3
// endpoints are Services of the manifests with those ports; workers take
// their slot count from their CPU limit and get more than -grace to stop.
// With kubectl or kustomize on the PATH, the kustomization must build (no
// cluster is needed for that; none runs here).
func TestKubernetesManifests(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "deploy", "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	objs := map[string]*k8sObject{} // kind/name
	for _, f := range append(kust.Resources, "submit-job.yaml") {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			o := &k8sObject{}
			err := dec.Decode(o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	get := func(key string) *k8sObject {
		o := objs[key]
		if o == nil {
			t.Fatalf("%s missing", key)
		}
		return o
	}
	secret := get("Secret/msjfarm-credentials")
	natsSS := get("StatefulSet/msjfarm-nats")
	if !strings.Contains(strings.Join(natsSS.Spec.Template.Spec.Containers[0].Args, " "), "-js") {
		t.Errorf("NATS without JetStream: %v", natsSS.Spec.Template.Spec.Containers[0].Args)
	}
	get("StatefulSet/msjfarm-minio")
	co := get("Deployment/msjfarm-coordinator")
	if co.Spec.Replicas == nil || *co.Spec.Replicas != 1 || co.Spec.Strategy.Type != "Recreate" {
		t.Errorf("coordinator: want exactly one, replaced with Recreate")
	}
	// The submit job reads the farm's store as the coordinator does: a
	// limit search, a trace or a plugin sweep failed ("give the farm's
	// --storage") without it.
	storageOf := func(o *k8sObject) string {
		for _, e := range o.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "MSJFARM_STORAGE" {
				return e.Value
			}
		}
		return ""
	}
	if sj := get("Job/msjfarm-submit"); storageOf(sj) == "" || storageOf(sj) != storageOf(co) {
		t.Errorf("submit job's MSJFARM_STORAGE %q, want the coordinator's %q", storageOf(sj), storageOf(co))
	}
	w := get("Deployment/msjfarm-worker")
	if w.Spec.Replicas == nil || *w.Spec.Replicas < 2 {
		t.Errorf("worker replicas %v", w.Spec.Replicas)
	}
	ports := map[string]int{} // service name → its ports
	for key, o := range objs {
		if name, ok := strings.CutPrefix(key, "Service/"); ok {
			for _, p := range o.Spec.Ports {
				ports[name+":"+strconv.Itoa(p.Port)] = p.Port
			}
		}
	}
	for key, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "StatefulSet" && o.Kind != "Job" {
			continue
		}
		if o.Kind != "Job" {
			var sel struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			}
			if err := o.Spec.Selector.Decode(&sel); err != nil || len(sel.MatchLabels) == 0 {
				t.Errorf("%s: no selector (%v)", key, err)
			}
			for k, v := range sel.MatchLabels {
				if o.Spec.Template.Metadata.Labels[k] != v {
					t.Errorf("%s: selector %s=%s does not match the pod labels", key, k, v)
				}
			}
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			env := map[string]string{}
			var names []string
			for _, e := range c.Env {
				env[e.Name] = e.Value
				names = append(names, e.Name)
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					if _, ok := secret.StringData[r.Key]; r.Name != secret.Metadata.Name || !ok {
						t.Errorf("%s: %s refers to %s/%s, not in the Secret", key, e.Name, r.Name, r.Key)
					}
				}
				if r := e.ValueFrom.ResourceFieldRef; r != nil && e.Name == "MSJFARM_WORKERS" {
					if res, ok := strings.CutPrefix(r.Resource, "limits."); !ok || c.Resources.Limits[res] == "" {
						t.Errorf("%s: MSJFARM_WORKERS from %s, which the container does not limit", key, r.Resource)
					}
				}
			}
			if c.Image != "msjfarm" {
				continue
			}
			checkArgs(t, key, c.Args, names)
			if c.Args[0] == "coordinator" || c.Args[0] == "worker" {
				// Liveness on /healthz and readiness on /readyz, on the
				// named container port the command serves them on.
				port := httpFlagPort(c.Args)
				if port == 0 {
					t.Errorf("%s: no -http/-metrics address for the probes", key)
				}
				for _, p := range []struct {
					what  string
					probe *k8sProbe
					path  string
				}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
					if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path {
						t.Errorf("%s: %s must GET %s", key, p.what, p.path)
						continue
					}
					ok := false
					for _, cp := range c.Ports {
						ok = ok || (cp.Name == p.probe.HTTPGet.Port && cp.ContainerPort == port)
					}
					if !ok {
						t.Errorf("%s: %s port %q is not the container port %d the command serves", key, p.what, p.probe.HTTPGet.Port, port)
					}
				}
			}
			if u := env["MSJFARM_NATS_URL"]; u != "" {
				pu, err := url.Parse(u)
				if err != nil || ports[pu.Host] == 0 {
					t.Errorf("%s: MSJFARM_NATS_URL %s is no Service port of the manifests", key, u)
				}
			}
			if s := env["MSJFARM_STORAGE"]; s != "" {
				pu, err := url.Parse(s)
				if err != nil || ports[pu.Query().Get("endpoint")] == 0 {
					t.Errorf("%s: MSJFARM_STORAGE %s: endpoint is no Service port of the manifests", key, s)
				}
			}
			if c.Args[0] == "worker" {
				if env["MSJFARM_WORKERS"] != "" || !contains(names, "MSJFARM_WORKERS") {
					t.Errorf("%s: MSJFARM_WORKERS must come from the CPU limit", key)
				}
				for i, a := range c.Args {
					if a == "-grace" && i+1 < len(c.Args) {
						g, err := time.ParseDuration(c.Args[i+1])
						if err != nil || time.Duration(o.Spec.Template.Spec.TerminationGracePeriodSeconds)*time.Second <= g {
							t.Errorf("%s: terminationGracePeriodSeconds %d does not leave -grace %s", key,
								o.Spec.Template.Spec.TerminationGracePeriodSeconds, c.Args[i+1])
						}
					}
				}
			}
		}
	}
	// A client that builds the kustomization, if any.
	var cmd *exec.Cmd
	if p, err := exec.LookPath("kubectl"); err == nil {
		cmd = exec.Command(p, "kustomize", dir)
	} else if p, err := exec.LookPath("kustomize"); err == nil {
		cmd = exec.Command(p, "build", dir)
	} else {
		t.Log("no kubectl or kustomize: structural checks only")
		return
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	if !bytes.Contains(out, []byte("image: msjfarm:latest")) {
		t.Errorf("%v: the msjfarm image is not set by the kustomization", cmd.Args)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
