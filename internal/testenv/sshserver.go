package testenv

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHServer serves the bare repositories of a GitServer over SSH, the way
// a forge's SSH endpoint does: the real OpenSSH sshd on 127.0.0.1 with a
// generated host key, one authorized client key, logging in as the user
// running the test, whose shell runs git-upload-pack and git-receive-pack.
// Clones and pushes are the real protocol, host key checking included.
type SSHServer struct {
	// Port is the server's port on 127.0.0.1.
	Port int
	// KeyFile is the authorized client's private key (OpenSSH format, no
	// passphrase).
	KeyFile string
	// KnownHostsFile holds the server's host key for [127.0.0.1]:Port.
	KnownHostsFile string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	user string
	git  *GitServer
}

// sshBindAttempts bounds the retries when another process takes the port
// between FreePort and sshd's bind.
const sshBindAttempts = 3

// NewSSHServer starts sshd in front of git's repositories; it stops when
// the test ends. It needs Debian's openssh-server (sshd); without it the
// test is skipped, or fails under StrictEnv. As root, sshd also needs its
// privilege separation directory, /run/sshd, which `make test-deps`
// creates.
func NewSSHServer(t testing.TB, git *GitServer) *SSHServer {
	t.Helper()
	sshd := findSSHD(t)
	if sshd == "" {
		return nil
	}
	if os.Geteuid() == 0 {
		if _, err := os.Stat("/run/sshd"); err != nil {
			Missing(t, "sshd's privilege separation directory /run/sshd (sshd runs as root here)", err)
			return nil
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshd: the current user: %v", err)
		return nil
	}
	dir, home := t.TempDir(), t.TempDir()
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	hostPub := WriteSSHKey(t, hostKey)
	s := &SSHServer{KeyFile: filepath.Join(dir, "id_ed25519"), KnownHostsFile: filepath.Join(dir, "known_hosts"),
		HostKey: hostPub, user: u.Username, git: git}
	clientPub := WriteSSHKey(t, s.KeyFile)
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatalf("sshd: %v", err)
		return nil
	}
	config := filepath.Join(dir, "sshd_config")
	// StrictModes no: the test's temporary directories are not owned and
	// locked down the way sshd wants a home's .ssh to be. SetEnv keeps the
	// user's git configuration out of what the server's git does, and
	// gives the session an empty home: the user's shell would otherwise
	// read their ~/.bashrc (bash does under sshd), seconds of work on a
	// developer's machine for every clone and push.
	text := strings.Join([]string{
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + authorized,
		"PidFile none",
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"AllowUsers " + u.Username,
		"SetEnv HOME=" + home + " GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null",
		"LogLevel VERBOSE",
		"",
	}, "\n")
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatalf("sshd: %v", err)
		return nil
	}
attempts:
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatalf("sshd: %v", err)
			return nil
		}
		out := NewTailBuffer(16 << 10)
		// -D: stay in the foreground; -e: log to stderr.
		cmd := exec.Command(sshd, "-D", "-e", "-f", config, "-p", strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", sshd, err)
			return nil
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		listening := fmt.Sprintf("Server listening on 127.0.0.1 port %d.", port)
		deadline := time.After(10 * time.Second)
		for !strings.Contains(out.String(), listening) {
			select {
			case <-done:
				if strings.Contains(out.String(), "Address already in use") && attempt < sshBindAttempts {
					continue attempts
				}
				t.Fatalf("sshd exited before it listened:\n%s", out.String())
				return nil
			case <-deadline:
				stop()
				t.Fatalf("sshd did not listen on port %d within 10s:\n%s", port, out.String())
				return nil
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Cleanup(func() {
			stop()
			if t.Failed() {
				t.Logf("sshd log, last lines:\n%s", out.String())
			}
		})
		s.Port = port
		line := fmt.Sprintf("[127.0.0.1]:%d %s", port, ssh.MarshalAuthorizedKey(hostPub))
		if err := os.WriteFile(s.KnownHostsFile, []byte(line), 0o600); err != nil {
			t.Fatalf("sshd: %v", err)
			return nil
		}
		return s
	}
}

// findSSHD finds sshd, which Debian installs in /usr/sbin, outside a
// non-root user's PATH.
func findSSHD(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
		return "/usr/sbin/sshd"
	}
	return LookPath(t, "sshd")
}

// RepoURL is the SSH URL of the GitServer's repository name.
func (s *SSHServer) RepoURL(name string) string {
	return fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", s.user, s.Port, filepath.ToSlash(s.git.Dir(name)))
}

// WriteSSHKey writes a new ed25519 private key, in OpenSSH format without
// a passphrase, to path (0600), and returns its public key.
func WriteSSHKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("ssh key: %v", err)
		return nil
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatalf("ssh key: %v", err)
		return nil
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatalf("ssh key: %v", err)
		return nil
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatalf("ssh key: %v", err)
		return nil
	}
	return sp
}
