// Package scm is the publishing shell around the plan: a git checkout of
// the base branch (go-git), commits and branch pushes with a lease, and the
// forges that hold pull requests (GitHub, GitLab, and a local stand-in for
// offline use), each saying who opened a pull request or issue, who the
// tool is there, and who changed a body since the tool wrote it (Mine is
// the one rule of what is the tool's). Nothing else here decides
// anything; it does what the publisher asks and reports what happened.
//
// It is one job in about 4,000 lines: a change set carried from the
// checkout to a pull request. Git, GitHub and GitLab each fill a few
// files, behind one set of errors that mean the same on every forge.
package scm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
)

// Auth says how to reach a remote. At most one of Token and SSHKeyFile is
// set; neither for a local path. Secrets live here, never in URLs, so that
// a URL can be printed.
type Auth struct {
	// Token is sent as HTTP basic auth with TokenUser (GitHub:
	// x-access-token, GitLab: oauth2).
	Token     string
	TokenUser string
	// SSHKeyFile is a private key; KnownHostsFile checks the server's key
	// (required: an unchecked host key would hand the key to anyone).
	SSHKeyFile     string
	KnownHostsFile string
	// CABundle is PEM CA certificates trusted over HTTPS besides the
	// system's (ReadCABundle): a forge with a private CA.
	CABundle []byte
}

// IsSSHURL reports whether url reaches its repository over SSH:
// ssh://[user@]host[:port]/path, or the scp-like [user@]host:path.
func IsSSHURL(url string) bool {
	ep, err := transport.NewEndpoint(url)
	return err == nil && ep.Protocol == "ssh"
}

// method is the go-git auth method for url.
func (a Auth) method(url string) (transport.AuthMethod, error) {
	switch {
	case a.Token != "":
		user := a.TokenUser
		if user == "" {
			user = "x-access-token"
		}
		return &http.BasicAuth{Username: user, Password: a.Token}, nil
	case a.SSHKeyFile != "":
		return a.sshMethod(url)
	}
	return nil, nil
}

// sshMethod authenticates with the key file as the URL's user (git when it
// names none), and checks the server's host key against the known_hosts
// file, strictly: an unknown or changed host key ends the connection
// before the key is offered. The host key algorithms are those the file
// holds for the host, so that a server offering several keys is checked
// against the one the file knows.
func (a Auth) sshMethod(url string) (transport.AuthMethod, error) {
	if a.KnownHostsFile == "" {
		return nil, errors.New("an SSH key needs a known_hosts file to check the server against")
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil || ep.Protocol != "ssh" {
		return nil, fmt.Errorf("an SSH key needs an SSH URL (ssh://user@host/path or user@host:path), got %q", url)
	}
	pem, err := localfile.Read(a.SSHKeyFile, localfile.MaxKey)
	if err != nil {
		return nil, fmt.Errorf("SSH key: %w", err)
	}
	keys, err := gitssh.NewPublicKeys(cmp.Or(ep.User, "git"), pem, "")
	if err != nil {
		return nil, fmt.Errorf("read SSH key %s: %w", a.SSHKeyFile, err)
	}
	// go-git skips a missing known_hosts file; one that was named must be
	// there, and be a file of a sane size, which go-git then reads again.
	if _, err := localfile.Read(a.KnownHostsFile, localfile.MaxKey); err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("read known_hosts %s: %w", a.KnownHostsFile, err)
	}
	port := ep.Port
	if port == 0 {
		port = 22
	}
	check := db.HostKeyCallback()
	keys.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := check(host, remote, key); err != nil {
			return fmt.Errorf("%w: the server's %s host key is not the one %s holds for %s (check the key, e.g. with ssh-keyscan, then add it)",
				err, key.Type(), a.KnownHostsFile, host)
		}
		return nil
	}
	keys.HostKeyAlgorithms = db.HostKeyAlgorithms(net.JoinHostPort(ep.Host, strconv.Itoa(port)))
	return keys, nil
}

// Signature is who commits.
type Signature struct {
	Name, Email string
	// Key, when set, signs the commits (OpenPGP), so that a protected
	// branch that requires signed commits accepts the tool's.
	Key *openpgp.Entity
}

// ReadSigningKey reads an armored OpenPGP private key, unencrypted (a key
// mounted from a secret: a passphrase would need a secret of its own).
func ReadSigningKey(path string) (*openpgp.Entity, error) {
	// Read whole first: the armor reader given a device spins for ever.
	b, err := localfile.Read(path, localfile.MaxKey)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	if len(keys) != 1 || keys[0].PrivateKey == nil {
		return nil, fmt.Errorf("signing key %s: want one private key, found %d key(s)", path, len(keys))
	}
	if keys[0].PrivateKey.Encrypted {
		return nil, fmt.Errorf("signing key %s: the key is protected by a passphrase", path)
	}
	return keys[0], nil
}

// Repo is a single-branch checkout of a remote's base branch, in a
// directory of its own. Every change is committed on top of the base as
// it was cloned: nothing is ever rebased.
type Repo struct {
	dir    string
	url    string
	base   string
	head   plumbing.Hash
	repo   *git.Repository
	auth   transport.AuthMethod
	secret string
	ca     []byte
	// local is the remote when it is a repository on this machine: pushes
	// to it write its objects and branches in-process (see pushLocal).
	local *git.Repository
	// deflaters are the zlib writers store reuses.
	deflaters sync.Pool

	// mu guards what commits to a local remote share: the pack of the
	// run's new objects, not yet pushed, and the base's trees they edit.
	mu    sync.Mutex
	root  plumbing.Hash
	pack  *packWriter
	trees map[plumbing.Hash]*baseTree
}

// Clone clones the base branch of url into dir (which must be empty or
// absent), shallow and single-branch.
func Clone(ctx context.Context, url, base, dir string, auth Auth) (*Repo, error) {
	m, err := auth.method(url)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(filepath.Join(url, ".git")); err == nil && st.IsDir() {
		// A local repository with a work tree: go-git reads a local
		// remote's objects from the path it is given when it pushes, so
		// give it the git directory.
		url = filepath.Join(url, ".git")
	}
	r := &Repo{dir: dir, url: url, base: base, auth: m, secret: auth.Token, ca: auth.CABundle}
	// The clone's own handle is dropped for openClone's, with a smaller
	// object cache, before anything reads through it.
	if _, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL:           url,
		Auth:          m,
		CABundle:      auth.CABundle,
		ReferenceName: plumbing.NewBranchReferenceName(base),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
		NoCheckout:    true, // writeWorktree writes it
	}); err != nil {
		return nil, r.errorf("clone %s (branch %s): %w", url, base, err)
	}
	repo, err := openClone(dir)
	if err != nil {
		return nil, r.errorf("clone %s: %w", url, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, r.errorf("clone %s: %w", url, err)
	}
	if err := writeWorktree(repo.Storer, head.Hash(), dir); err != nil {
		return nil, r.errorf("clone %s (branch %s): %w", url, base, err)
	}
	r.repo, r.head = repo, head.Hash()
	if path, ok := localPath(url); ok {
		if r.local, err = git.PlainOpen(path); err != nil {
			return nil, r.errorf("open %s: %w", url, err)
		}
	}
	return r, nil
}

// objectCache is the clone's cache of decoded objects. go-git's default,
// 96 MiB, filled with the trees a push of many branches reads: 124 MB of a
// run's 180 MB live heap at 2,000 pull requests, in a job of 512 MiB.
// A push reads each base tree once (collect.baseEntries) and each new
// object once, so a small cache costs little.
const objectCache = 8 * cache.MiByte

// openClone opens the clone at dir again with a cache of objectCache.
func openClone(dir string) (*git.Repository, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	wt := osfs.New(dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	return git.Open(filesystem.NewStorage(dot, cache.NewObjectLRU(objectCache)), wt)
}

// localPath is the path of a repository on this machine that url names
// (a path, or a file:// URL), ok false for a remote one.
func localPath(url string) (string, bool) {
	if p, ok := strings.CutPrefix(url, "file://"); ok {
		return p, true
	}
	if strings.Contains(url, "://") || IsSSHURL(url) {
		return "", false
	}
	return url, true
}

// Dir is the checkout's directory, holding the base branch's files.
func (r *Repo) Dir() string { return r.dir }

// Base is the commit of the base branch the checkout holds.
func (r *Repo) Base() plumbing.Hash { return r.head }

// Message is the base commit's message, "" when it cannot be read.
func (r *Repo) Message() string {
	c, err := r.repo.CommitObject(r.head)
	if err != nil {
		return ""
	}
	return c.Message
}

// Branches lists the remote's branches whose names start with prefix,
// with their commits, as the remote advertises them now.
func (r *Repo) Branches(ctx context.Context, prefix string) (map[string]plumbing.Hash, error) {
	rem, err := r.repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return nil, err
	}
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: r.auth, CABundle: r.ca})
	if err != nil {
		return nil, r.errorf("list branches of %s: %w", r.url, err)
	}
	out := map[string]plumbing.Hash{}
	for _, ref := range refs {
		if ref.Name().IsBranch() && strings.HasPrefix(ref.Name().Short(), prefix) && ref.Type() == plumbing.HashReference {
			out[ref.Name().Short()] = ref.Hash()
		}
	}
	return out, nil
}

// File is a file's new content, by slash-separated path in the checkout.
type File struct {
	Path string
	Data []byte
}

// Commit makes one commit on top of the base holding files, and returns
// it. It writes objects only: the base's tree with the changed paths
// replaced, so its cost follows the files changed, not the repository's
// size, and the checkout's files stay the base's.
func (r *Repo) Commit(files []File, message string, who Signature, at time.Time) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	packed := r.local != nil
	if packed && r.pack == nil {
		r.pack = newPackWriter()
	}
	put := func(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
		if packed {
			return r.pack.add(t, data)
		}
		return r.writeObject(t, data)
	}
	root, err := r.baseRoot()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	edits := &treeEdit{sub: map[string]*treeEdit{}, blobs: map[string]plumbing.Hash{}}
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || path.Clean(f.Path) != f.Path {
			return plumbing.ZeroHash, fmt.Errorf("%q is not a path inside the checkout", f.Path)
		}
		h, err := put(plumbing.BlobObject, f.Data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		edits.add(strings.Split(f.Path, "/"), h)
	}
	var tree plumbing.Hash
	if packed {
		tree, err = r.packTree(root, "", edits)
	} else {
		tree, err = r.editTree(root, "", edits)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: who.Name, Email: who.Email, When: at}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{r.head}}
	if who.Key != nil {
		if c.PGPSignature, err = sign(c, who.Key); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	var h plumbing.Hash
	if packed {
		rd, _ := obj.Reader()
		data, _ := io.ReadAll(rd)
		h, err = r.pack.add(plumbing.CommitObject, data)
	} else {
		h, err = r.store(obj)
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	return h, nil
}

// baseRoot is the base commit's tree, read once.
func (r *Repo) baseRoot() (plumbing.Hash, error) {
	if r.root.IsZero() {
		base, err := r.repo.CommitObject(r.head)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read the base: %w", err)
		}
		r.root = base.TreeHash
	}
	return r.root, nil
}

// treeEdit is the paths a commit changes below one directory: files by
// name to their new blobs, subdirectories by name to their own edits.
type treeEdit struct {
	sub   map[string]*treeEdit
	blobs map[string]plumbing.Hash
}

func (e *treeEdit) add(parts []string, blob plumbing.Hash) {
	if len(parts) == 1 {
		e.blobs[parts[0]] = blob
		return
	}
	next := e.sub[parts[0]]
	if next == nil {
		next = &treeEdit{sub: map[string]*treeEdit{}, blobs: map[string]plumbing.Hash{}}
		e.sub[parts[0]] = next
	}
	next.add(parts[1:], blob)
}

// editTree writes the tree at dir (hash zero: a new directory) with edits
// made, and returns its hash. A changed file keeps its mode (executable or
// not); a path that is a symlink, a submodule or a directory in the base
// is refused, as writing through it would change something else.
func (r *Repo) editTree(hash plumbing.Hash, dir string, e *treeEdit) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if !hash.IsZero() {
		t, err := r.repo.TreeObject(hash)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read the tree of %s/: %w", dir, err)
		}
		entries = slices.Clone(t.Entries)
	}
	inBase := len(entries)
	for name := range e.blobs {
		if _, ok := e.sub[name]; ok {
			return plumbing.ZeroHash, fmt.Errorf("%s is both a file and a directory of the commit", path.Join(dir, name))
		}
	}
	done := map[string]bool{}
	for i, en := range entries {
		name := path.Join(dir, en.Name)
		if blob, ok := e.blobs[en.Name]; ok {
			if en.Mode != filemode.Regular && en.Mode != filemode.Executable && en.Mode != filemode.Deprecated {
				return plumbing.ZeroHash, fmt.Errorf("%s is not a regular file", name)
			}
			entries[i].Hash = blob
			done[en.Name] = true
		}
		if sub, ok := e.sub[en.Name]; ok {
			if en.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is not a directory", name)
			}
			h, err := r.editTree(en.Hash, name, sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries[i].Hash = h
			done[en.Name] = true
		}
	}
	for name, blob := range e.blobs {
		if !done[name] {
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob})
		}
	}
	for name, sub := range e.sub {
		if !done[name] {
			h, err := r.editTree(plumbing.ZeroHash, path.Join(dir, name), sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
	}
	// Git orders a tree's entries by name, a directory's as if it ended in
	// a slash: another order is a different, invalid tree.
	key := func(en object.TreeEntry) string {
		if en.Mode == filemode.Dir {
			return en.Name + "/"
		}
		return en.Name
	}
	// The base's entries are in that order already: only new ones need it.
	if len(entries) > inBase {
		slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.store(obj)
}

// writeObject stores data as an object of type t and returns its hash.
func (r *Repo) writeObject(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(t)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.store(obj)
}

// sign is the commit's detached, armored OpenPGP signature over the
// commit as encoded without one, which is what git verifies.
func sign(c *object.Commit, key *openpgp.Entity) (string, error) {
	obj := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(obj); err != nil {
		return "", err
	}
	rd, err := obj.Reader()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := openpgp.ArmoredDetachSign(&b, key, rd, nil); err != nil {
		return "", fmt.Errorf("sign the commit: %w", err)
	}
	return b.String(), nil
}

// Update is one branch a push moves: to Commit, if the remote's branch
// still holds Expected, the commit it held when it was read (zero: it did
// not exist).
type Update struct {
	Branch           string
	Commit, Expected plumbing.Hash
}

// Push points the remote's branch at commit, with a lease on expected: a
// PushAll of one update.
func (r *Repo) Push(ctx context.Context, branch string, commit, expected plumbing.Hash) error {
	return r.PushAll(ctx, []Update{{Branch: branch, Commit: commit, Expected: expected}})[0]
}

// PushAll moves the remote's branches in one push, each with a lease: a
// branch is moved only if it still holds what was read, else its entry is
// ErrLeaseBroken and nothing of it is overwritten. The branches succeed or
// fail each alone: errs[i] is updates[i]'s outcome, nil when the branch
// holds its commit now (already holding it counts). A push that fails as
// a whole (the remote cannot be reached) gives every entry its error.
func (r *Repo) PushAll(ctx context.Context, updates []Update) []error {
	errs := make([]error, len(updates))
	seen := map[string]bool{}
	for i, u := range updates {
		if seen[u.Branch] {
			errs[i] = fmt.Errorf("push %s: the branch is pushed twice", u.Branch)
		}
		seen[u.Branch] = true
	}
	if r.local != nil {
		r.pushLocal(updates, errs)
	} else {
		r.pushRemote(ctx, updates, errs)
	}
	return errs
}

// pushLocal is PushAll to a repository on this machine, in-process: the
// commits' objects the repository lacks are written into it, then each
// branch is moved by compare-and-set, only if it still holds what was
// read. go-git's file transport would spawn git-receive-pack, which runs
// the repository's server-side hooks (pre-receive, update, post-receive,
// reference-transaction, …, and wherever core.hooksPath points): a
// repository's content must never make the tool run a program.
func (r *Repo) pushLocal(updates []Update, errs []error) {
	// The clone came from the repository, which holds the base then, and
	// all it reaches, unless the base branch was rewritten and the base
	// collected since.
	packed, err := r.flushPack()
	if err != nil {
		for i, u := range updates {
			if errs[i] == nil {
				errs[i] = r.errorf("push %s to %s: %w", u.Branch, r.url, err)
			}
		}
		return
	}
	c := &collect{src: r.repo.Storer, dst: r.local.Storer, base: r.head, seen: map[plumbing.Hash]bool{}}
	c.hasBase = c.dst.HasEncodedObject(r.head) == nil
	var pushed []int
	for i, u := range updates {
		if errs[i] != nil {
			continue
		}
		if c.hasBase && packed[u.Commit] {
			// The run's pack holds all it reaches but the base's.
			pushed = append(pushed, i)
			continue
		}
		if err := c.commit(u.Commit); err != nil {
			errs[i] = r.errorf("push %s to %s: %w", u.Branch, r.url, err)
			continue
		}
		pushed = append(pushed, i)
	}
	if err := c.write(); err != nil {
		for _, i := range pushed {
			errs[i] = r.errorf("push %s to %s: %w", updates[i].Branch, r.url, err)
		}
		return
	}
	for _, i := range pushed {
		errs[i] = r.setLocal(updates[i])
	}
}

// setLocal moves one branch of the local remote by compare-and-set.
func (r *Repo) setLocal(u Update) error {
	name := plumbing.NewBranchReferenceName(u.Branch)
	cur, err := r.local.Storer.Reference(name)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		cur = nil
	case err != nil:
		return r.errorf("push %s to %s: %w", u.Branch, r.url, err)
	}
	switch {
	case cur != nil && cur.Hash() == u.Commit:
		return nil // already there
	case u.Expected.IsZero() && cur != nil, !u.Expected.IsZero() && (cur == nil || cur.Hash() != u.Expected):
		return fmt.Errorf("push %s: %w", u.Branch, ErrLeaseBroken)
	}
	if err := r.local.Storer.CheckAndSetReference(plumbing.NewHashReference(name, u.Commit), cur); err != nil {
		if errors.Is(err, storage.ErrReferenceHasChanged) {
			return fmt.Errorf("push %s: %w", u.Branch, ErrLeaseBroken)
		}
		return r.errorf("push %s to %s: %w", u.Branch, r.url, err)
	}
	return nil
}

// pushRemote is PushAll over smart HTTP or SSH, as one receive-pack
// request: each branch a command whose old value is the commit the branch
// held when it was read, which git-receive-pack compares and sets under
// the ref's lock, so a branch that moved even between the advertisement
// and the update is refused, alone. A branch the advertisement already
// shows moved is left out of the request. The pack holds the commits'
// objects the remote's advertised branches do not reach.
func (r *Repo) pushRemote(ctx context.Context, updates []Update, errs []error) {
	fail := func(err error) {
		err = r.errorf("push to %s: %w", r.url, err)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	sess, err := r.receivePack()
	if err != nil {
		fail(err)
		return
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		fail(err)
		return
	}
	refs, err := adv.AllReferences()
	if err != nil {
		fail(err)
		return
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	at := map[plumbing.ReferenceName]int{}
	var wants []plumbing.Hash
	for i, u := range updates {
		if errs[i] != nil {
			continue
		}
		name := plumbing.NewBranchReferenceName(u.Branch)
		cur := plumbing.ZeroHash
		if ref, err := refs.Reference(name); err == nil {
			cur = ref.Hash()
		}
		switch {
		case cur == u.Commit:
			continue // already there
		case cur != u.Expected:
			errs[i] = fmt.Errorf("push %s: %w", u.Branch, ErrLeaseBroken)
			continue
		}
		at[name] = i
		req.Commands = append(req.Commands, &packp.Command{Name: name, Old: u.Expected, New: u.Commit})
		wants = append(wants, u.Commit)
	}
	if len(req.Commands) == 0 {
		return
	}
	status, err := r.sendPack(ctx, sess, adv, refs, req, wants)
	switch {
	case status != nil:
		// The error, if any, is the report's first refusal: the report
		// says each branch's.
		r.readStatus(status, at, errs)
	case err != nil:
		fail(err)
	}
}

// receivePack opens a push session to the remote.
func (r *Repo) receivePack() (transport.ReceivePackSession, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, err
	}
	ep.CaBundle = r.ca
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, err
	}
	return cl.NewReceivePackSession(ep, r.auth)
}

// sendPack sends req's commands with a pack of the objects of wants that
// neither the remote's branches nor the shallow clone's boundary reach.
func (r *Repo) sendPack(ctx context.Context, sess transport.ReceivePackSession, adv *packp.AdvRefs, refs storer.ReferenceStorer,
	req *packp.ReferenceUpdateRequest, wants []plumbing.Hash) (*packp.ReportStatus, error) {
	var haves []plumbing.Hash
	it, err := refs.IterReferences()
	if err != nil {
		return nil, err
	}
	err = it.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			haves = append(haves, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	shallow, err := r.repo.Storer.Shallow()
	if err != nil {
		return nil, err
	}
	objs, err := revlist.Objects(r.repo.Storer, wants, append(haves, shallow...))
	if err != nil {
		return nil, fmt.Errorf("list the objects to send: %w", err)
	}
	cfg, err := r.repo.Storer.Config()
	if err != nil {
		return nil, err
	}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(wr, r.repo.Storer, !adv.Capabilities.Supports(capability.OFSDelta)).Encode(objs, cfg.Pack.Window)
		done <- wr.CloseWithError(err)
	}()
	status, err := sess.ReceivePack(ctx, req)
	// Unblock the encoder if the request stopped reading it.
	_ = rd.Close()
	if encErr := <-done; err == nil && encErr != nil {
		err = encErr
	}
	return status, err
}

// readStatus sets each command's outcome from the remote's report: a
// refusal names the server's reason, and is ErrLeaseBroken when git says
// the branch was not where the command expected it.
func (r *Repo) readStatus(status *packp.ReportStatus, at map[plumbing.ReferenceName]int, errs []error) {
	if status.UnpackStatus != "ok" {
		for name, i := range at {
			errs[i] = r.errorf("push %s to %s: the remote could not unpack the objects: %s", name.Short(), r.url, status.UnpackStatus)
		}
		return
	}
	reported := map[plumbing.ReferenceName]bool{}
	for _, cs := range status.CommandStatuses {
		i, ok := at[cs.ReferenceName]
		if !ok {
			continue
		}
		reported[cs.ReferenceName] = true
		if cs.Status == "ok" {
			continue
		}
		err := r.errorf("push %s to %s: the remote refused it: %s", cs.ReferenceName.Short(), r.url, cs.Status)
		if leaseRefused(cs.Status) {
			err = withClass(err, ErrLeaseBroken)
		}
		errs[i] = err
	}
	for name, i := range at {
		if !reported[name] {
			errs[i] = r.errorf("push %s to %s: the remote did not say whether it took it", name.Short(), r.url)
		}
	}
}

// collect gathers the objects of a push to a repository on this machine
// that it lacks, then writes them as one pack.
type collect struct {
	src, dst storer.EncodedObjectStorer
	// base is the commit the clone holds; hasBase, whether dst holds it,
	// and so every object it reaches.
	base    plumbing.Hash
	hasBase bool
	seen    map[plumbing.Hash]bool
	objs    []plumbing.Hash
	bases   map[plumbing.Hash]map[string]object.TreeEntry // baseEntries
}

// commit gathers commit h's objects: for a commit on top of the base,
// only its tree's objects that differ from the base's tree at the same
// path, found without looking the others up, so that its cost follows
// what it changed, not the repository's size; for any other, every
// object it reaches that dst lacks.
func (c *collect) commit(h plumbing.Hash) error {
	if c.seen[h] || c.dst.HasEncodedObject(h) == nil {
		return nil
	}
	commit, err := object.GetCommit(c.src, h)
	if err != nil {
		return fmt.Errorf("read commit %s: %w", h, err)
	}
	if !c.hasBase || len(commit.ParentHashes) != 1 || commit.ParentHashes[0] != c.base {
		return c.all(h)
	}
	base, err := object.GetCommit(c.src, c.base)
	if err != nil {
		return fmt.Errorf("read the base: %w", err)
	}
	if err := c.tree(commit.TreeHash, base.TreeHash); err != nil {
		return err
	}
	c.add(h)
	return nil
}

// baseEntries is the entries of tree h of the base (none for zero) by
// name, read once for all the commits of a push: each commit of a push
// compares its trees with the same trees of the base.
func (c *collect) baseEntries(h plumbing.Hash) (map[string]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	if was, ok := c.bases[h]; ok {
		return was, nil
	}
	b, err := object.GetTree(c.src, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	was := make(map[string]object.TreeEntry, len(b.Entries))
	for _, e := range b.Entries {
		was[e.Name] = e
	}
	if c.bases == nil {
		c.bases = map[plumbing.Hash]map[string]object.TreeEntry{}
	}
	c.bases[h] = was
	return was, nil
}

// tree gathers tree h where it differs from base, the tree at the same
// path in the base (zero: none).
func (c *collect) tree(h, base plumbing.Hash) error {
	if h == base || c.seen[h] {
		return nil
	}
	t, err := object.GetTree(c.src, h)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", h, err)
	}
	was, err := c.baseEntries(base)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		old, ok := was[e.Name]
		switch {
		case ok && old.Hash == e.Hash, e.Mode == filemode.Submodule:
		case e.Mode == filemode.Dir:
			if !ok || old.Mode != filemode.Dir {
				old.Hash = plumbing.ZeroHash
			}
			if err := c.tree(e.Hash, old.Hash); err != nil {
				return err
			}
		default:
			c.add(e.Hash)
		}
	}
	c.add(h)
	return nil
}

func (c *collect) add(h plumbing.Hash) {
	if !c.seen[h] {
		c.seen[h] = true
		c.objs = append(c.objs, h)
	}
}

// all gathers the objects reachable from h that dst lacks. An object dst
// holds is taken to hold what it points to, as a repository's objects
// do.
func (c *collect) all(h plumbing.Hash) error {
	if c.seen[h] || c.dst.HasEncodedObject(h) == nil {
		return nil
	}
	c.add(h)
	obj, err := c.src.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return fmt.Errorf("read object %s: %w", h, err)
	}
	var next []plumbing.Hash
	switch obj.Type() {
	case plumbing.CommitObject:
		commit, err := object.DecodeCommit(c.src, obj)
		if err != nil {
			return err
		}
		next = append([]plumbing.Hash{commit.TreeHash}, commit.ParentHashes...)
	case plumbing.TreeObject:
		t, err := object.DecodeTree(c.src, obj)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			if e.Mode != filemode.Submodule {
				next = append(next, e.Hash)
			}
		}
	}
	for _, n := range next {
		if err := c.all(n); err != nil {
			return err
		}
	}
	return nil
}

// write stores the gathered objects in dst, as one pack when dst takes
// packs (a repository's does), so that a push of many branches writes
// one file, not one an object. Only what the run's own pack does not
// hold comes here (pushLocal).
func (c *collect) write() error {
	if len(c.objs) == 0 {
		return nil
	}
	pw, ok := c.dst.(storer.PackfileWriter)
	if !ok {
		for _, h := range c.objs {
			obj, err := c.src.EncodedObject(plumbing.AnyObject, h)
			if err != nil {
				return fmt.Errorf("read object %s: %w", h, err)
			}
			if _, err := c.dst.SetEncodedObject(obj); err != nil {
				return fmt.Errorf("write object %s: %w", h, err)
			}
		}
		return nil
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return fmt.Errorf("write the objects: %w", err)
	}
	// No deltas: the objects are each a few changed entries, and a delta
	// search would cost more than it saves.
	if _, err := packfile.NewEncoder(w, c.src, false).Encode(c.objs, 0); err != nil {
		w.Close()
		return fmt.Errorf("write the objects: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write the objects: %w", err)
	}
	return nil
}

// fetch fetches a branch of the remote (its newest commit only) into its
// remote-tracking ref, and returns the commit: go-git needs it to compute
// what a push sends.
func (r *Repo) fetch(ctx context.Context, branch string) (plumbing.Hash, error) {
	local := plumbing.NewBranchReferenceName(branch)
	tracking := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)
	err := r.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		Auth:       r.auth,
		CABundle:   r.ca,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", local, tracking))},
		Depth:      1,
		Tags:       git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, r.errorf("fetch %s from %s: %w", branch, r.url, err)
	}
	ref, err := r.repo.Storer.Reference(tracking)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("fetch %s: %w", branch, err)
	}
	return ref.Hash(), nil
}

// Commit is what the publisher reads of a branch's newest commit.
type Commit struct {
	Author  Signature
	Message string
}

// Head reads the newest commit of a remote branch: who wrote it (a branch
// whose newest commit is not the tool's was edited by a person) and its
// message (where the tool records what the branch holds).
func (r *Repo) Head(ctx context.Context, branch string) (Commit, error) {
	var c *object.Commit
	var err error
	if r.local != nil {
		// Read in place, as a local push writes: no process per branch.
		var ref *plumbing.Reference
		if ref, err = r.local.Storer.Reference(plumbing.NewBranchReferenceName(branch)); err != nil {
			return Commit{}, r.errorf("read %s of %s: %w", branch, r.url, err)
		}
		c, err = object.GetCommit(r.local.Storer, ref.Hash())
	} else {
		var h plumbing.Hash
		if h, err = r.fetch(ctx, branch); err != nil {
			return Commit{}, err
		}
		c, err = r.repo.CommitObject(h)
	}
	if err != nil {
		return Commit{}, fmt.Errorf("read the newest commit of %s: %w", branch, err)
	}
	return Commit{Author: Signature{Name: c.Author.Name, Email: c.Author.Email}, Message: c.Message}, nil
}

// errorf is fmt.Errorf that scrubs the token from the message: transport
// errors may quote what they were given.
func (r *Repo) errorf(format string, args ...any) error {
	return scrub(fmt.Errorf(format, args...), r.secret)
}
