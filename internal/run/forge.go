package run

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// forge opens where the pull requests live, and says where to clone from
// and with which credentials.
func (o *Options) forge(ctx context.Context) (publish.Forge, string, scm.Auth, error) {
	var ca []byte
	var tr http.RoundTripper
	if o.CAFile != "" && o.SCM != "local" {
		var err error
		if ca, err = scm.ReadCABundle(o.CAFile); err != nil {
			return nil, "", scm.Auth{}, err
		}
		if tr, err = scm.CATransport(ca); err != nil {
			return nil, "", scm.Auth{}, fmt.Errorf("CA file %s: %w", o.CAFile, err)
		}
	}
	switch o.SCM {
	case "gitlab":
		cfg, err := o.GitLab.config()
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		if tr != nil {
			cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: tr}
		}
		gl, err := scm.NewGitLab(ctx, cfg)
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		auth := gl.GitAuth()
		auth.CABundle = ca
		return gl, gl.CloneURL(), auth, nil
	case "github":
		cfg, err := o.GitHub.config()
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		cfg.Logger, cfg.Transport = o.Logger, tr
		gh, err := scm.NewGitHub(ctx, cfg)
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		auth := gh.GitAuth()
		auth.CABundle = ca
		return gh, gh.CloneURL(), auth, nil
	}
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return nil, "", scm.Auth{}, err
	}
	gitDir := filepath.Join(repo, ".git")
	if st, err := os.Stat(gitDir); err != nil || !st.IsDir() {
		gitDir = repo // a bare repository
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return nil, "", scm.Auth{}, fmt.Errorf("repository %s: not a git repository", o.Repo)
	}
	local, err := scm.NewLocal(filepath.Join(gitDir, "gpu-rightsizing", "pulls"))
	if err != nil {
		return nil, "", scm.Auth{}, err
	}
	return local, repo, scm.Auth{}, nil
}

// config builds the forge's configuration, reading the token.
func (f *GitHub) config() (scm.GitHubConfig, error) {
	owner, name, _ := strings.Cut(f.Repo, "/")
	cfg := scm.GitHubConfig{Owner: owner, Repo: name, BaseURL: f.URL,
		AppID: f.AppID, InstallationID: f.InstallationID, PrivateKeyFile: f.AppKeyFile}
	if f.AppID != 0 {
		return cfg, nil
	}
	tok, err := secret(f.TokenFile, f.TokenEnv)
	if err != nil {
		return cfg, fmt.Errorf("GitHub token: %w", err)
	}
	cfg.Token = tok
	return cfg, nil
}

func (f *GitLab) config() (scm.GitLabConfig, error) {
	tok, err := secret(f.TokenFile, f.TokenEnv)
	if err != nil {
		return scm.GitLabConfig{}, fmt.Errorf("GitLab token: %w", err)
	}
	return scm.GitLabConfig{BaseURL: f.URL, Project: f.Project, Token: tok}, nil
}

// secret reads a credential from file, or else from the environment
// variable env; it is an error when neither holds one.
func secret(file, env string) (string, error) {
	if file != "" {
		return prometheus.ReadSecret(file)
	}
	if s := strings.TrimSpace(os.Getenv(env)); env != "" && s != "" {
		return s, nil
	}
	return "", fmt.Errorf("no token: give a file, or set $%s", env)
}
