package kubeenv

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed" // the upstream CRDs
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"go.yaml.in/yaml/v3"
)

// APIServerVersion is the Kubernetes release of the API server the tests
// run: hack/kube-apiserver builds it and scripts/install-test-deps.sh caches
// it under this name.
const APIServerVersion = "v1.34.4"

// APIServerEnv names the environment variable that points at a
// kube-apiserver binary to use instead of the one the test set-up script
// caches.
const APIServerEnv = "RECOMMENDER_KUBE_APISERVER"

// Admin is the user every API server started by StartAPIServer has,
// in the group system:masters, which RBAC lets do anything.
const Admin = "admin"

// User is a user the API server knows by a bearer token.
type User struct {
	Name   string
	Groups []string
}

// APIServer is a real kube-apiserver with its own etcd, started for one
// test. No controller runs beside it: a Deployment is stored and its
// generation counts changes to its spec, but no ReplicaSet or Pod appears.
type APIServer struct {
	// URL is the server's base URL, https://127.0.0.1:PORT, without a
	// trailing slash.
	URL string
	// CAData is the PEM certificate of the authority that signed the
	// server's certificate.
	CAData []byte

	tokens  map[string]string // user name → bearer token
	client  *http.Client      // trusts CAData
	logPath string
}

// StartAPIServer starts etcd and kube-apiserver on loopback, with data in
// a temporary directory, and stops both when the test ends. The server
// authenticates bearer tokens (see Token and Kubeconfig) and authorizes with
// RBAC; the user Admin always exists and users are added, with no role
// bound to them. It returns once /readyz answers.
//
// etcd is looked up in PATH, kube-apiserver at APIServerEnv or in the
// cache scripts/install-test-deps.sh builds it into; when one is missing the
// test is skipped, or fails under testenv.StrictEnv. Starting takes a few seconds,
// so a test package is better served by one server per top-level test, its
// subtests each in a namespace of their own.
func StartAPIServer(t testing.TB, users ...User) *APIServer {
	t.Helper()
	etcd := testenv.LookPath(t, "etcd")
	if etcd == "" {
		return nil
	}
	apiserver, err := kubeAPIServerBinary()
	if err != nil {
		testenv.Missing(t, "kube-apiserver", err)
		return nil
	}

	began := time.Now()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "kube.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating the API server's log: %v", err)
		return nil
	}
	t.Cleanup(func() { logFile.Close() })
	showLog := func() {
		if t.Failed() {
			t.Logf("etcd and kube-apiserver log (%s), last lines:\n%s", logPath, tailFile(logPath, 6000))
		}
	}

	s, files, err := writeKubeFiles(dir, users)
	if err != nil {
		t.Fatalf("preparing the API server: %v", err)
		return nil
	}
	s.logPath = logPath

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	etcdURL, etcdProc, err := startEtcd(ctx, etcd, dir, logFile)
	if err != nil {
		showLog()
		t.Fatalf("starting etcd for the API server: %v\n%s", err, tailFile(logPath, 4000))
		return nil
	}
	t.Cleanup(func() {
		if err := etcdProc.stop(10 * time.Second); err != nil {
			t.Errorf("stopping etcd: %v", err)
		}
	})
	apiProc, err := s.startAPIServer(ctx, apiserver, etcdURL, files, logFile)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v\n%s", err, tailFile(logPath, 6000))
		return nil
	}
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		if err := apiProc.stop(10 * time.Second); err != nil {
			t.Errorf("stopping kube-apiserver: %v", err)
		}
		showLog()
	})
	t.Logf("kube-apiserver %s ready at %s in %v", APIServerVersion, s.URL, time.Since(began).Round(time.Millisecond))
	return s
}

// APIServerCachePath returns where scripts/install-test-deps.sh keeps
// the kube-apiserver it builds: under RECOMMENDER_CACHE_DIR, else
// $XDG_CACHE_HOME/gpu-rightsizing-recommender, else
// ~/.cache/gpu-rightsizing-recommender.
func APIServerCachePath() (string, error) {
	return cachePath("kube-apiserver", APIServerVersion)
}

// cachePath returns where scripts/install-test-deps.sh keeps the program
// name at version: $cache/name-version/name.
func cachePath(name, version string) (string, error) {
	cache := os.Getenv("RECOMMENDER_CACHE_DIR")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("locating the test tools' cache: %w", err)
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "gpu-rightsizing-recommender")
	}
	return filepath.Join(cache, name+"-"+version, name), nil
}

// kubeAPIServerBinary returns the kube-apiserver to run.
func kubeAPIServerBinary() (string, error) {
	path := os.Getenv(APIServerEnv)
	from := APIServerEnv
	if path == "" {
		var err error
		if path, err = APIServerCachePath(); err != nil {
			return "", err
		}
		from = "the test tools' cache"
	}
	if err := executable(path); err != nil {
		return "", fmt.Errorf("kube-apiserver from %s: %w", from, err)
	}
	return path, nil
}

// executable says why path is not a program to run, or nil.
func executable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// joinDocs joins YAML documents into one stream.
func joinDocs(docs [][]byte) []byte {
	var b []byte
	for _, d := range docs {
		b = append(b, "\n---\n"...)
		b = append(b, d...)
	}
	return b
}

// Token returns the bearer token of a user the server was started with, or
// "" for a user it does not know.
func (s *APIServer) Token(user string) string {
	return s.tokens[user]
}

// Log returns what etcd and kube-apiserver have printed so far.
func (s *APIServer) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("reading the API server's log: %v", err)
	}
	return string(b)
}

// Kubeconfig writes a kubeconfig that reaches the server as user into a
// temporary directory of the test and returns its path.
func (s *APIServer) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	token := s.tokens[user]
	if token == "" {
		t.Fatalf("kubeconfig: the API server has no user %q", user)
		return ""
	}
	// JSON is YAML, and a quoted string needs no further escaping.
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: testenv
  context:
    cluster: testenv
    user: %s
current-context: testenv
`, q(s.URL), q(base64.StdEncoding.EncodeToString(s.CAData)), q(user), q(token), q(user))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatalf("writing the kubeconfig: %v", err)
		return ""
	}
	return path
}

// Do sends one request as user ("" for an anonymous one) and returns the
// status and body of the answer, whatever the status. path starts with a
// slash, query included; contentType is sent when body is not nil ("" means
// application/json). A request that gets no answer fails the test.
func (s *APIServer) Do(t testing.TB, user, method, path string, body []byte, contentType string) (status int, resp []byte) {
	t.Helper()
	status, resp, err := s.do(t.Context(), user, method, path, body, contentType)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return status, resp
}

func (s *APIServer) do(ctx context.Context, user, method, path string, body []byte, contentType string) (int, []byte, error) {
	var token string
	if user != "" {
		if token = s.tokens[user]; token == "" {
			return 0, nil, fmt.Errorf("%s %s: the API server has no user %q", method, path, user)
		}
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s as %q: %w", method, path, user, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s as %q: reading the answer: %w", method, path, user, err)
	}
	return res.StatusCode, b, nil
}

// Apply creates each object of the YAML documents in manifests as
// Admin: Namespaces first, then CustomResourceDefinitions, waiting until
// each is established, then the rest in their order. A namespaced object
// without a namespace goes to "default". Every object is created with
// strict field validation (fieldValidation=Strict: an unknown or repeated
// field is an error, as `kubectl apply --validate=strict` makes it, where
// the default would drop it with a warning). An object the server refuses,
// one that exists already included, fails the test.
func (s *APIServer) Apply(t testing.TB, manifests []byte) {
	t.Helper()
	if err := s.apply(t.Context(), manifests); err != nil {
		t.Fatalf("applying manifests: %v", err)
	}
}

// InstallKAIQueueCRD creates the CustomResourceDefinition of KAI
// Scheduler's Queue (scheduling.run.ai/v2), and waits until Queues can be
// created.
func (s *APIServer) InstallKAIQueueCRD(t testing.TB) {
	t.Helper()
	s.Apply(t, KAIQueueCRD())
}

//go:embed testdata/kai-queue-crd.yaml
var kaiQueueCRD []byte

//go:embed testdata/argocd-application-crd.yaml
var argoApplicationCRD []byte

// InstallArgoCDApplicationCRD creates Argo CD's Application
// CustomResourceDefinition (argoproj.io/v1alpha1, as Argo CD v3.5.1
// publishes it) and the namespace argocd, with no controller: Argo CD is
// not run here, its objects are held to its schema.
func (s *APIServer) InstallArgoCDApplicationCRD(t testing.TB) {
	t.Helper()
	s.Apply(t, append([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}\n---\n"), argoApplicationCRD...))
}

//go:embed testdata/argo-rollout-crd.yaml
var argoRolloutCRD []byte

// InstallArgoRolloutCRD creates Argo Rollouts' Rollout
// CustomResourceDefinition (argoproj.io/v1alpha1, as Argo Rollouts v1.9.1
// publishes it), with no controller: a Rollout is stored and held to its
// schema, pod template included, but nothing rolls it out.
func (s *APIServer) InstallArgoRolloutCRD(t testing.TB) {
	t.Helper()
	s.Apply(t, argoRolloutCRD)
}

//go:embed testdata/leaderworkerset-crd.yaml
var leaderWorkerSetCRD []byte

// InstallLeaderWorkerSetCRD creates the LeaderWorkerSet
// CustomResourceDefinition (leaderworkerset.x-k8s.io/v1, as lws v0.10.0
// publishes it), with no controller: a LeaderWorkerSet is stored and held
// to its schema, both pod templates included, but no group is created.
func (s *APIServer) InstallLeaderWorkerSetCRD(t testing.TB) {
	t.Helper()
	s.Apply(t, leaderWorkerSetCRD)
}

//go:embed testdata/dynamographdeployment-crd.yaml
var dynamoGraphDeploymentCRD []byte

// InstallDynamoGraphDeploymentCRD creates NVIDIA Dynamo's
// DynamoGraphDeployment CustomResourceDefinition (nvidia.com/v1alpha1, as
// Dynamo v0.5.1 publishes it), with no operator: a graph is stored and
// held to its schema, each service's extraPodSpec (a whole pod spec)
// included, but no DynamoComponentDeployment or pod is made from it.
func (s *APIServer) InstallDynamoGraphDeploymentCRD(t testing.TB) {
	t.Helper()
	s.Apply(t, dynamoGraphDeploymentCRD)
}

// DynamoGraphDeploymentCRD returns the CustomResourceDefinition
// InstallDynamoGraphDeploymentCRD creates, as YAML: the one copy of it,
// which tests also read the schema of.
func DynamoGraphDeploymentCRD() []byte { return slices.Clone(dynamoGraphDeploymentCRD) }

// KAIQueueCRD returns the CustomResourceDefinition InstallKAIQueueCRD
// creates, as YAML.
func KAIQueueCRD() []byte { return slices.Clone(kaiQueueCRD) }

// kubeObject is one document of a manifest.
type kubeObject struct {
	line int    // where the document starts
	json []byte // the document as JSON, as the server takes it
	meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
}

func (o *kubeObject) String() string {
	name := o.meta.Metadata.Name
	if o.meta.Metadata.Namespace != "" {
		name = o.meta.Metadata.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s (line %d)", o.meta.Kind, name, o.line)
}

// splitManifests decodes each non-empty YAML document of manifests.
func splitManifests(manifests []byte) ([]*kubeObject, error) {
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	var objs []*kubeObject
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding the YAML: %w", err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
			continue // an empty document
		}
		var v map[string]any
		if err := doc.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: a document must be a mapping: %w", doc.Line, err)
		}
		o := &kubeObject{line: doc.Line}
		if o.json, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("line %d: converting to JSON: %w", doc.Line, err)
		}
		if err := json.Unmarshal(o.json, &o.meta); err != nil {
			return nil, fmt.Errorf("line %d: reading apiVersion, kind and metadata: %w", doc.Line, err)
		}
		if o.meta.APIVersion == "" || o.meta.Kind == "" || o.meta.Metadata.Name == "" {
			return nil, fmt.Errorf("line %d: a document needs apiVersion, kind and metadata.name", doc.Line)
		}
		objs = append(objs, o)
	}
}

func isCRD(o *kubeObject) bool {
	return o.meta.Kind == "CustomResourceDefinition" && strings.HasPrefix(o.meta.APIVersion, "apiextensions.k8s.io/")
}

func (s *APIServer) apply(ctx context.Context, manifests []byte) error {
	objs, err := splitManifests(manifests)
	if err != nil {
		return err
	}
	rank := func(o *kubeObject) int {
		switch {
		case o.meta.Kind == "Namespace" && o.meta.APIVersion == "v1":
			return 0
		case isCRD(o):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(objs, func(a, b *kubeObject) int { return rank(a) - rank(b) })
	for _, o := range objs {
		path, err := s.collection(ctx, o)
		if err != nil {
			return fmt.Errorf("%v: %w", o, err)
		}
		status, body, err := s.do(ctx, Admin, http.MethodPost, path+"?fieldValidation=Strict", o.json, "application/json")
		if err != nil {
			return fmt.Errorf("%v: %w", o, err)
		}
		if status != http.StatusCreated && status != http.StatusOK {
			return fmt.Errorf("%v: POST %s: %d %s", o, path, status, statusMessage(body))
		}
		if isCRD(o) {
			if err := s.waitEstablished(ctx, o.meta.Metadata.Name); err != nil {
				return fmt.Errorf("%v: %w", o, err)
			}
		}
	}
	granted, err := grants(objs)
	if err != nil {
		return err
	}
	return s.waitGranted(ctx, granted)
}

// collection returns the path to POST o to, found through discovery. A
// resource whose CustomResourceDefinition was just established can take a
// moment to be discovered, so a miss is retried for a few seconds.
func (s *APIServer) collection(ctx context.Context, o *kubeObject) (string, error) {
	gvPath := "/apis/" + o.meta.APIVersion
	if !strings.Contains(o.meta.APIVersion, "/") {
		gvPath = "/api/" + o.meta.APIVersion
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body, err := s.do(ctx, Admin, http.MethodGet, gvPath, nil, "")
		if err != nil {
			return "", err
		}
		var list struct {
			Resources []struct {
				Name       string `json:"name"`
				Kind       string `json:"kind"`
				Namespaced bool   `json:"namespaced"`
			} `json:"resources"`
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &list); err != nil {
				return "", fmt.Errorf("decoding the discovery of %s: %w", o.meta.APIVersion, err)
			}
		}
		for _, r := range list.Resources {
			if r.Kind != o.meta.Kind || strings.Contains(r.Name, "/") {
				continue
			}
			if !r.Namespaced {
				return gvPath + "/" + r.Name, nil
			}
			ns := o.meta.Metadata.Namespace
			if ns == "" {
				ns = "default"
			}
			return gvPath + "/namespaces/" + ns + "/" + r.Name, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the API server serves no kind %s in %s (discovery: %d)", o.meta.Kind, o.meta.APIVersion, status)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settle bounds each wait for the control plane to catch up: an
// Established CRD, a granted role, an exporter's complete scrape. They
// poll, so the bound costs nothing when the machine is quick; on two
// cores at a load of 25 a CRD took over 30 seconds.
const settle = 2 * time.Minute

// waitEstablished waits until the CustomResourceDefinition name is
// Established, or reports why it was not within settle.
func (s *APIServer) waitEstablished(ctx context.Context, name string) error {
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name
	deadline := time.Now().Add(settle)
	var last string
	for {
		status, body, err := s.do(ctx, Admin, http.MethodGet, path, nil, "")
		if err != nil {
			return err
		}
		var crd struct {
			Status struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &crd); err != nil {
				return fmt.Errorf("decoding CustomResourceDefinition %s: %w", name, err)
			}
		}
		last = fmt.Sprintf("GET answered %d", status)
		for _, c := range crd.Status.Conditions {
			if c.Type == "Established" && c.Status == "True" {
				return nil
			}
			last += fmt.Sprintf("; %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CustomResourceDefinition %s not established after %s: %s", name, settle, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// condition is one of an object's status conditions, as Kubernetes and
// Flux write them.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// statusMessage returns the message of a metav1.Status answer, or the answer.
func statusMessage(body []byte) string {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Reason + ": " + st.Message
	}
	return testenv.Tail(string(body), 2000)
}

// kubeFiles are the files kube-apiserver reads.
type kubeFiles struct {
	certDir, tlsCert, tlsKey, saKey, saPub, tokens string
}

// writeKubeFiles generates the server's credentials into dir: a certificate
// authority and the serving certificate it signs for 127.0.0.1, the key
// service-account tokens are signed with, and a token for each user.
func writeKubeFiles(dir string, users []User) (*APIServer, kubeFiles, error) {
	f := kubeFiles{
		certDir: filepath.Join(dir, "certs"),
		tlsCert: filepath.Join(dir, "tls.crt"),
		tlsKey:  filepath.Join(dir, "tls.key"),
		saKey:   filepath.Join(dir, "sa.key"),
		saPub:   filepath.Join(dir, "sa.pub"),
		tokens:  filepath.Join(dir, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, f, fmt.Errorf("generating the CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testenv kube CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, f, fmt.Errorf("signing the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, f, fmt.Errorf("reading back the CA certificate: %w", err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, f, fmt.Errorf("generating the serving key: %w", err)
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, f, fmt.Errorf("signing the serving certificate: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, f, fmt.Errorf("generating the service-account key: %w", err)
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	srvKeyPEM, err := privateKeyPEM(srvKey)
	if err != nil {
		return nil, f, err
	}
	saKeyPEM, err := privateKeyPEM(saKey)
	if err != nil {
		return nil, f, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, f, fmt.Errorf("encoding the service-account public key: %w", err)
	}

	s := &APIServer{CAData: caPEM, tokens: map[string]string{}}
	var csv strings.Builder
	all := append([]User{{Name: Admin, Groups: []string{"system:masters"}}}, users...)
	for i, u := range all {
		if u.Name == "" || strings.ContainsAny(u.Name, ",\"\n") {
			return nil, f, fmt.Errorf("user %d: name %q is empty or has a comma, quote or newline", i, u.Name)
		}
		if _, dup := s.tokens[u.Name]; dup {
			return nil, f, fmt.Errorf("user %q is given twice (%q always exists)", u.Name, Admin)
		}
		for _, g := range u.Groups {
			if g == "" || strings.ContainsAny(g, ",\"\n") {
				return nil, f, fmt.Errorf("user %q: group %q is empty or has a comma, quote or newline", u.Name, g)
			}
		}
		buf := make([]byte, 16)
		if _, err := rand.Read(buf); err != nil {
			return nil, f, fmt.Errorf("generating a token: %w", err)
		}
		token := hex.EncodeToString(buf)
		s.tokens[u.Name] = token
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&csv, "%s,%s,uid-%d,\"%s\"\n", token, u.Name, i, strings.Join(u.Groups, ","))
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	s.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 4,
	}}

	for _, w := range []struct {
		path string
		data []byte
	}{
		{f.tlsCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})},
		{f.tlsKey, srvKeyPEM},
		{f.saKey, saKeyPEM},
		{f.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{f.tokens, []byte(csv.String())},
	} {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return nil, f, fmt.Errorf("writing the API server's credentials: %w", err)
		}
	}
	if err := os.MkdirAll(f.certDir, 0o700); err != nil {
		return nil, f, fmt.Errorf("creating the API server's certificate directory: %w", err)
	}
	return s, f, nil
}

func privateKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// process is a child process that writes to the shared log.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *testenv.TailBuffer
	// done is closed once the process has exited, and waitErr set.
	done    chan struct{}
	waitErr error
}

func startProcess(name string, log io.Writer, path string, args ...string) (*process, error) {
	return startProcessEnv(name, log, nil, path, args...)
}

// startProcessEnv is startProcess with the environment env (nil: this
// process's).
func startProcessEnv(name string, log io.Writer, env []string, path string, args ...string) (*process, error) {
	p := &process{name: name, out: testenv.NewTailBuffer(8 << 10), done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = env
	p.cmd.Stdout = io.MultiWriter(log, p.out)
	p.cmd.Stderr = p.cmd.Stdout
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop asks the process to shut down and kills it if it has not within grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	<-p.done
	return fmt.Errorf("%s (pid %d) did not stop within %v of SIGTERM and was killed", p.name, p.cmd.Process.Pid, grace)
}

// settle ends an attempt to start p, given what waiting for it returned:
// p itself when it got ready; else p stopped, and retry says whether a
// port another process took explains the failure, so that an attempt on
// new ports may bind.
func (p *process) settle(ready error) (kept *process, retry bool, err error) {
	if ready == nil {
		return p, false, nil
	}
	if stopErr := p.stop(5 * time.Second); stopErr != nil {
		ready = fmt.Errorf("%w; %w", ready, stopErr)
	}
	return nil, strings.Contains(p.out.String(), "address already in use"), ready
}

// waitFor polls ready every 20ms until it says true, the process exits (a
// lost port is then testenv.ErrPortTaken), or ctx ends.
func (p *process) waitFor(ctx context.Context, what string, ready func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-p.done:
			if strings.Contains(p.out.String(), "address already in use") {
				return testenv.ErrPortTaken
			}
			return fmt.Errorf("%s exited before %s: %w", p.name, what, cmp.Or(p.waitErr, testenv.ErrExitedCleanly))
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting until %s: %w", p.name, what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// startEtcd starts a single-member etcd on two free loopback ports, with its
// data in dir, and returns its client URL once it reports itself healthy.
func startEtcd(ctx context.Context, etcd, dir string, log io.Writer) (string, *process, error) {
	var lastErr error
	for attempt := range testenv.BindAttempts {
		client, err := testenv.FreePort()
		if err != nil {
			return "", nil, err
		}
		peer, err := testenv.FreePort()
		if err != nil {
			return "", nil, err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		fmt.Fprintf(log, "testenv: starting etcd on %s (attempt %d)\n", clientURL, attempt+1)
		p, err := startProcess("etcd", log, etcd,
			"--name=testenv",
			"--data-dir="+filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt)),
			"--listen-client-urls="+clientURL,
			"--advertise-client-urls="+clientURL,
			"--listen-peer-urls="+peerURL,
			"--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=testenv="+peerURL,
			"--initial-cluster-state=new",
			// One member has nobody to wait for: elect it at once.
			"--heartbeat-interval=10",
			"--election-timeout=50",
			"--logger=zap",
			"--log-level=warn",
		)
		if err != nil {
			return "", nil, err
		}
		httpc := &http.Client{Timeout: time.Second}
		err = p.waitFor(ctx, "it was healthy", func() bool {
			resp, err := getCtx(ctx, httpc, clientURL+"/health")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var h struct {
				Health string `json:"health"`
			}
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
		})
		httpc.CloseIdleConnections()
		if err == nil {
			return clientURL, p, nil
		}
		if stopErr := p.stop(5 * time.Second); stopErr != nil {
			err = fmt.Errorf("%w; %w", err, stopErr)
		}
		if !errors.Is(err, testenv.ErrPortTaken) {
			return "", nil, err
		}
		lastErr = err
	}
	return "", nil, lastErr
}

// startAPIServer starts kube-apiserver on a free loopback port against etcd
// and waits until /readyz answers to Admin, setting s.URL.
func (s *APIServer) startAPIServer(ctx context.Context, apiserver, etcdURL string, f kubeFiles, log io.Writer) (*process, error) {
	var lastErr error
	for attempt := range testenv.BindAttempts {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		s.URL = "https://127.0.0.1:" + strconv.Itoa(port)
		fmt.Fprintf(log, "testenv: starting kube-apiserver on %s (attempt %d)\n", s.URL, attempt+1)
		p, err := startProcess("kube-apiserver", log, apiserver,
			"--etcd-servers="+etcdURL,
			// Each attempt starts afresh, even if an earlier one wrote.
			"--etcd-prefix=/registry-"+strconv.Itoa(attempt),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port="+strconv.Itoa(port),
			"--cert-dir="+f.certDir,
			"--tls-cert-file="+f.tlsCert,
			"--tls-private-key-file="+f.tlsKey,
			"--token-auth-file="+f.tokens,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file="+f.saPub,
			"--service-account-signing-key-file="+f.saKey,
			"--service-cluster-ip-range=10.96.0.0/16",
			// No controller manager runs, so nothing would create the
			// service accounts the admission plugin insists on.
			"--disable-admission-plugins=ServiceAccount",
			// Loopback addresses are not valid endpoints of the
			// kubernetes Service; nothing here needs them.
			"--endpoint-reconciler-type=none",
			// Its bootstrap configuration only slows the start.
			"--enable-priority-and-fairness=false",
			"--profiling=false",
		)
		if err != nil {
			return nil, err
		}
		err = p.waitFor(ctx, "it was ready", func() bool {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			status, _, err := s.do(rctx, Admin, http.MethodGet, "/readyz", nil, "")
			return err == nil && status == http.StatusOK
		})
		if err == nil {
			return p, nil
		}
		if stopErr := p.stop(10 * time.Second); stopErr != nil {
			err = fmt.Errorf("%w; %w", err, stopErr)
		}
		if !errors.Is(err, testenv.ErrPortTaken) {
			return nil, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// tailFile returns the last n bytes of the file at path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	return testenv.Tail(string(b), n)
}
