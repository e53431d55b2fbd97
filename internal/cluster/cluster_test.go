package cluster_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// kubeContext is one context of a kubeconfig: a server, and a token for
// it.
type kubeContext struct {
	name, server, token string
	ca                  []byte
}

// writeKubeconfig writes a kubeconfig of contexts, the first the current
// one, to path.
func writeKubeconfig(t *testing.T, path string, contexts ...kubeContext) string {
	t.Helper()
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	var clusters, users, ctxs strings.Builder
	for _, c := range contexts {
		fmt.Fprintf(&clusters, "- name: %s\n  cluster:\n    server: %s\n", q(c.name), q(c.server))
		if c.ca != nil {
			fmt.Fprintf(&clusters, "    certificate-authority-data: %s\n", q(base64.StdEncoding.EncodeToString(c.ca)))
		}
		fmt.Fprintf(&users, "- name: %s\n  user:\n    token: %s\n", q(c.name), q(c.token))
		fmt.Fprintf(&ctxs, "- name: %s\n  context:\n    cluster: %s\n    user: %s\n", q(c.name), q(c.name), q(c.name))
	}
	text := "apiVersion: v1\nkind: Config\nclusters:\n" + clusters.String() + "users:\n" + users.String() +
		"contexts:\n" + ctxs.String() + "current-context: " + q(contexts[0].name) + "\n"
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// isolate leaves the test no kubeconfig but those it writes, and no
// cluster around it: HOME is an empty directory, $KUBECONFIG and the
// in-cluster variables unset.
func isolate(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return home
}

// TestConfigFindsTheKubeconfig: the kubeconfig is found as kubectl finds
// it, --kubeconfig first, then $KUBECONFIG, then ~/.kube/config; a
// context name picks a context other than the current one.
func TestConfigFindsTheKubeconfig(t *testing.T) {
	at := func(name string) kubeContext {
		return kubeContext{name: name, server: "https://" + name + ".example:6443", token: name}
	}
	tests := []struct {
		name string
		// flag, env and home are the contexts of the kubeconfig named by
		// --kubeconfig, $KUBECONFIG and in ~/.kube/config; none when nil.
		flag, env, home []kubeContext
		context         string
		want            string // the server reached
		err             string
	}{
		{name: "--kubeconfig", flag: []kubeContext{at("flag")}, env: []kubeContext{at("env")}, home: []kubeContext{at("home")}, want: "https://flag.example:6443"},
		{name: "$KUBECONFIG", env: []kubeContext{at("env")}, home: []kubeContext{at("home")}, want: "https://env.example:6443"},
		{name: "~/.kube/config", home: []kubeContext{at("home")}, want: "https://home.example:6443"},
		{name: "a context by name", flag: []kubeContext{at("prod"), at("staging")}, context: "staging", want: "https://staging.example:6443"},
		{name: "a context by name, from $KUBECONFIG", env: []kubeContext{at("prod"), at("staging")}, context: "staging", want: "https://staging.example:6443"},
		{name: "the current context", env: []kubeContext{at("prod"), at("staging")}, want: "https://prod.example:6443"},
		{name: "a context the kubeconfig lacks", flag: []kubeContext{at("prod")}, context: "dev", err: `flag: context "dev" does not exist`},
		{name: "nothing to go by", err: "no kubeconfig given, none in $KUBECONFIG or ~/.kube/config, and not in a cluster (unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined): set `--kubeconfig`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			var o cluster.Options
			if tt.flag != nil {
				o.Kubeconfig = writeKubeconfig(t, filepath.Join(t.TempDir(), "flag"), tt.flag...)
			}
			if tt.env != nil {
				t.Setenv("KUBECONFIG", writeKubeconfig(t, filepath.Join(t.TempDir(), "env"), tt.env...))
			}
			if tt.home != nil {
				writeKubeconfig(t, filepath.Join(home, ".kube", "config"), tt.home...)
			}
			o.Context = tt.context
			cfg, err := cluster.Config(o)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Host)
		})
	}
}

// TestConfigErrors: a kubeconfig that cannot be read is named in the
// error, and one named by the flag must exist.
func TestConfigErrors(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := cluster.Config(cluster.Options{Kubeconfig: missing})
	require.EqualError(t, err, "kubeconfig "+missing+": stat "+missing+": no such file or directory")

	broken := filepath.Join(t.TempDir(), "broken")
	require.NoError(t, os.WriteFile(broken, []byte("clusters: {this is: not a list}\n"), 0o600))
	_, err = cluster.Config(cluster.Options{Kubeconfig: broken})
	require.ErrorContains(t, err, "kubeconfig "+broken+": ")
	t.Setenv("KUBECONFIG", broken)
	_, err = cluster.Config(cluster.Options{})
	require.ErrorContains(t, err, "kubeconfig: ")
	require.ErrorContains(t, err, broken)

	// What clientcmd would read whole is held to localfile's bounds first.
	huge := filepath.Join(t.TempDir(), "huge")
	require.NoError(t, os.WriteFile(huge, bytes.Repeat([]byte("# padding\n"), 500<<10), 0o600))
	for path, want := range map[string]string{
		"/dev/zero": "kubeconfig: read /dev/zero: not a regular file",
		huge:        "kubeconfig: read " + huge + ": too large: more than 4 MiB",
	} {
		_, err := cluster.Config(cluster.Options{Kubeconfig: path})
		require.EqualError(t, err, want)
		t.Setenv("KUBECONFIG", path)
		_, err = cluster.Config(cluster.Options{})
		require.EqualError(t, err, want)
	}
}

// TestConnect: each way of finding the kubeconfig reaches a real API
// server, its CA and token read from the file.
func TestConnect(t *testing.T) {
	s := kubeenv.StartAPIServer(t)
	if s == nil {
		return
	}
	real := kubeContext{name: "testenv", server: s.URL, token: s.Token(kubeenv.Admin), ca: s.CAData}
	elsewhere := kubeContext{name: "elsewhere", server: "https://127.0.0.1:1", token: "x"}
	tests := []struct {
		name  string
		setup func(t *testing.T, home string) cluster.Options
	}{
		{name: "--kubeconfig", setup: func(t *testing.T, _ string) cluster.Options {
			return cluster.Options{Kubeconfig: writeKubeconfig(t, filepath.Join(t.TempDir(), "config"), real)}
		}},
		{name: "$KUBECONFIG", setup: func(t *testing.T, _ string) cluster.Options {
			t.Setenv("KUBECONFIG", writeKubeconfig(t, filepath.Join(t.TempDir(), "config"), real))
			return cluster.Options{}
		}},
		{name: "~/.kube/config", setup: func(t *testing.T, home string) cluster.Options {
			writeKubeconfig(t, filepath.Join(home, ".kube", "config"), real)
			return cluster.Options{}
		}},
		{name: "a context other than the current one", setup: func(t *testing.T, home string) cluster.Options {
			writeKubeconfig(t, filepath.Join(home, ".kube", "config"), elsewhere, real)
			return cluster.Options{Context: "testenv"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			kube, dyn, err := cluster.Connect(tt.setup(t, home))
			require.NoError(t, err)
			require.NotNil(t, dyn)
			ns, err := kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, "default", ns.Name)
		})
	}
}
