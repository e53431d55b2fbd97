package kubeenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The Flux controllers the GitOps loop tests run: hack/flux builds each from
// its own module at these versions (the wrapper modules' requirements; a
// test checks that they agree) and scripts/install-test-deps.sh caches it,
// with the CRDs its module ships, beside the kube-apiserver.
const (
	FluxSourceControllerVersion    = "v1.9.1"
	FluxKustomizeControllerVersion = "v1.9.6"
	FluxHelmControllerVersion      = "v1.6.4"
)

// FluxNamespace is where the Flux objects of a test live, as in a cluster
// that `flux install` set up.
const FluxNamespace = "flux-system"

// fluxControllers are the controllers StartFlux runs, in start order:
// source-controller serves the artifacts the others fetch.
var fluxControllers = []struct{ name, version string }{
	{"source-controller", FluxSourceControllerVersion},
	{"kustomize-controller", FluxKustomizeControllerVersion},
	{"helm-controller", FluxHelmControllerVersion},
}

// FluxControllerPath returns where scripts/install-test-deps.sh keeps the
// controller name (source-controller, kustomize-controller,
// helm-controller) it builds; its CRDs are in the directory "crds" beside it.
func FluxControllerPath(name string) (string, error) {
	i := slices.IndexFunc(fluxControllers, func(c struct{ name, version string }) bool { return c.name == name })
	if i < 0 {
		return "", fmt.Errorf("no Flux controller %q", name)
	}
	return cachePath(name, fluxControllers[i].version)
}

// FluxCRDs returns the CustomResourceDefinitions of the Flux controllers,
// as their modules ship them (config/crd/bases), from the test tools'
// cache: YAML documents, one file each.
func FluxCRDs() ([][]byte, error) {
	var crds [][]byte
	for _, c := range fluxControllers {
		bin, err := FluxControllerPath(c.name)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(filepath.Dir(bin), "crds", "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs of %s %s in %s (run `make test-deps`)", c.name, c.version, filepath.Join(filepath.Dir(bin), "crds"))
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			crds = append(crds, b)
		}
	}
	return crds, nil
}

// InstallFluxCRDs creates the Flux CustomResourceDefinitions on the server
// and the namespace FluxNamespace, with no controller: for tests that
// create Flux objects under strict field validation. The test is skipped
// (or fails under testenv.StrictEnv) when `make test-deps` has not built Flux.
func (s *APIServer) InstallFluxCRDs(t testing.TB) bool {
	t.Helper()
	crds, err := FluxCRDs()
	if err != nil {
		testenv.Missing(t, "the Flux controllers' CRDs", err)
		return false
	}
	s.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+FluxNamespace+"}\n---\n"+string(joinDocs(crds))))
	return true
}

// Flux is Flux's source-, kustomize- and helm-controller, each the real
// program built from its module, running as a process against one
// APIServer. No kubelet or controller manager runs: the controllers
// apply objects, and Deployments store the pod templates they are given
// without ever rolling pods, so a Kustomization or HelmRelease that waits
// for readiness never becomes ready; the tests' ones do not wait.
type Flux struct {
	kube    *APIServer
	logPath string
}

// StartFlux installs the Flux CRDs on kube and starts the three
// controllers as Admin, stopping them when the test ends. It returns
// once each reports itself ready. Missing binaries skip the test, or fail
// it under testenv.StrictEnv.
func StartFlux(t testing.TB, kube *APIServer) *Flux {
	t.Helper()
	if !kube.InstallFluxCRDs(t) {
		return nil
	}
	bins := make([]string, len(fluxControllers))
	for i, c := range fluxControllers {
		bin, err := FluxControllerPath(c.name)
		if err == nil {
			err = executable(bin)
		}
		if err != nil {
			testenv.Missing(t, c.name+" "+c.version, err)
			return nil
		}
		bins[i] = bin
	}
	began := time.Now()
	dir := t.TempDir()
	f := &Flux{kube: kube, logPath: filepath.Join(dir, "flux.log")}
	logFile, err := os.Create(f.logPath)
	if err != nil {
		t.Fatalf("creating Flux's log: %v", err)
		return nil
	}
	t.Cleanup(func() { logFile.Close() })
	// A temporary directory of their own: kustomize-controller builds in
	// one, and nothing another test does in the machine's /tmp can take it
	// away mid-build.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatalf("creating Flux's temporary directory: %v", err)
		return nil
	}
	env := append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig(t, Admin), "RUNTIME_NAMESPACE="+FluxNamespace, "TMPDIR="+tmp)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i, c := range fluxControllers {
		p, err := f.start(ctx, c.name, bins[i], dir, env, logFile)
		if err != nil {
			t.Fatalf("starting %s: %v\n%s", c.name, err, tailFile(f.logPath, 6000))
			return nil
		}
		t.Cleanup(func() {
			// A controller may wait out a reconciliation in flight before it
			// stops; a test that is over need not wait for it.
			if err := p.stop(3 * time.Second); err != nil {
				t.Logf("stopping %s: %v", c.name, err)
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Flux controllers' log (%s), last lines:\n%s", f.logPath, tailFile(f.logPath, 8000))
		}
	})
	t.Logf("Flux source-controller %s, kustomize-controller %s, helm-controller %s ready in %v",
		FluxSourceControllerVersion, FluxKustomizeControllerVersion, FluxHelmControllerVersion, time.Since(began).Round(time.Millisecond))
	return f
}

// start runs one controller on free loopback ports and waits for its
// readiness probe.
func (f *Flux) start(ctx context.Context, name, bin, dir string, env []string, log *os.File) (*process, error) {
	var lastErr error
	for attempt := range testenv.BindAttempts {
		health, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		healthAddr := "127.0.0.1:" + strconv.Itoa(health)
		args := []string{
			"--health-addr=" + healthAddr,
			"--metrics-addr=0", // no metrics server
			"--log-level=info",
			"--log-encoding=console",
		}
		if name == "source-controller" {
			storage, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			addr := "127.0.0.1:" + strconv.Itoa(storage)
			artifacts := filepath.Join(dir, fmt.Sprintf("artifacts-%d", attempt))
			if err := os.Mkdir(artifacts, 0o700); err != nil {
				return nil, err
			}
			args = append(args,
				"--storage-path="+artifacts,
				// The address the other controllers fetch artifacts from.
				"--storage-addr="+addr,
				"--storage-adv-addr="+addr,
			)
		}
		fmt.Fprintf(log, "testenv: starting %s (attempt %d)\n", name, attempt+1)
		p, err := startProcessEnv(name, log, env, bin, args...)
		if err != nil {
			return nil, err
		}
		httpc := &http.Client{Timeout: time.Second}
		err = p.waitFor(ctx, "it was ready", func() bool {
			resp, err := getCtx(ctx, httpc, "http://"+healthAddr+"/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		httpc.CloseIdleConnections()
		kept, retry, err := p.settle(err)
		if !retry {
			return kept, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// Log returns what the controllers have printed so far.
func (f *Flux) Log() string {
	b, err := os.ReadFile(f.logPath)
	if err != nil {
		return fmt.Sprintf("reading Flux's log: %v", err)
	}
	return string(b)
}

// GitRepositorySource creates, in FluxNamespace, a GitRepository named
// name that fetches branch of the repository at url with git's basic auth
// (any user name, token as the password), and the Secret holding it.
func (f *Flux) GitRepositorySource(t testing.TB, name, url, token, branch string) {
	t.Helper()
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	f.kube.Apply(t, fmt.Appendf(nil, `apiVersion: v1
kind: Secret
metadata: {name: %[1]s-auth, namespace: %[2]s}
stringData: {username: git, password: %[3]s}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  interval: 10m
  url: %[4]s
  ref: {branch: %[5]s}
  secretRef: {name: %[1]s-auth}
`, name, FluxNamespace, q(token), q(url), q(branch)))
}

// FluxObject names a Flux object: its resource path under /apis.
type FluxObject struct {
	Kind, Namespace, Name string
}

func (o FluxObject) path() string {
	group := map[string]string{
		"GitRepository": "source.toolkit.fluxcd.io/v1/namespaces/%s/gitrepositories/%s",
		"HelmChart":     "source.toolkit.fluxcd.io/v1/namespaces/%s/helmcharts/%s",
		"Kustomization": "kustomize.toolkit.fluxcd.io/v1/namespaces/%s/kustomizations/%s",
		"HelmRelease":   "helm.toolkit.fluxcd.io/v2/namespaces/%s/helmreleases/%s",
	}[o.Kind]
	return "/apis/" + fmt.Sprintf(group, o.Namespace, o.Name)
}

func (o FluxObject) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

// FluxStatus is what the tests read of a Flux object's status.
type FluxStatus struct {
	LastHandledReconcileAt string `json:"lastHandledReconcileAt"`
	LastAppliedRevision    string `json:"lastAppliedRevision"`
	Artifact               *struct {
		Revision string `json:"revision"`
	} `json:"artifact"`
	Conditions []condition `json:"conditions"`
}

// Ready returns the Ready condition's status and message.
func (s FluxStatus) Ready() (status, message string) {
	for _, c := range s.Conditions {
		if c.Type == "Ready" {
			return c.Status, c.Reason + ": " + c.Message
		}
	}
	return "Unknown", "no Ready condition"
}

// Status reads o's status.
func (f *Flux) Status(t testing.TB, o FluxObject) FluxStatus {
	t.Helper()
	code, body := f.kube.Do(t, Admin, http.MethodGet, o.path(), nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET %v: %d %s", o, code, statusMessage(body))
	}
	var obj struct {
		Status FluxStatus `json:"status"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("decoding %v: %v", o, err)
	}
	return obj.Status
}

// Reconcile asks the controller to reconcile o now, as `flux reconcile`
// does (the annotation reconcile.fluxcd.io/requestedAt), and waits until
// it has handled the request and o is Ready, returning its status. done,
// when not nil, must also hold of the status (a revision reached, say).
func (f *Flux) Reconcile(t testing.TB, o FluxObject, done func(FluxStatus) bool) FluxStatus {
	t.Helper()
	at := strconv.FormatInt(time.Now().UnixNano(), 10)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, at)
	if code, body := f.kube.Do(t, Admin, http.MethodPatch, o.path(), patch, "application/merge-patch+json"); code != http.StatusOK {
		t.Fatalf("requesting a reconciliation of %v: %d %s", o, code, statusMessage(body))
	}
	return f.Wait(t, o, func(s FluxStatus) bool {
		ready, _ := s.Ready()
		return s.LastHandledReconcileAt == at && ready == "True" && (done == nil || done(s))
	})
}

// Wait polls o's status until done holds, for at most two minutes.
func (f *Flux) Wait(t testing.TB, o FluxObject, done func(FluxStatus) bool) FluxStatus {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := f.Status(t, o)
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			ready, msg := s.Ready()
			t.Fatalf("%v: not there after 2m: Ready=%s (%s), status %+v", o, ready, msg, s)
			return s
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%v: %v", o, t.Context().Err())
			return s
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Revision is how Flux names a commit of a branch: "main@sha1:<hash>".
func Revision(branch, commit string) string { return branch + "@sha1:" + commit }
