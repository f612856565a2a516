package artifact

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"unicode/utf8"
)

const (
	dirPerm  fs.FileMode = 0o700
	filePerm fs.FileMode = 0o600

	gitignoreName    = ".gitignore"
	gitignoreContent = "*\n"
)

// Put stores content whole and returns where it is. The file is named by
// the SHA-256 of the content, so the same content is stored once: a second
// Put finds the file, checks its hash, and writes nothing. The extension is
// .md for UTF-8 text (the engine's message with its attachments is
// Markdown) and .txt otherwise.
//
// Every folder and file on the path inside the workspace is checked with
// Lstat and refused (ErrUnsafePath) when it is a symbolic link, of the wrong
// kind, or owned by another user; the opened folder is compared with the
// checked one so a swap in between is refused too. Past the quota, Put
// refuses with ErrQuotaExceeded and deletes nothing.
func (s *Store) Put(content []byte) (Artifact, error) {
	sum := sha256.Sum256(content)
	return s.store(ArtifactsDirName, hex.EncodeToString(sum[:])+extension(content), sum, content)
}

// store writes content as .cc-connect/<sub>/<name> with every check Put
// documents, under the Store's quota for that folder alone. sum is the
// content's SHA-256, which names the file (in part or whole) and lets an
// existing copy be recognised without writing it again.
func (s *Store) store(sub, name string, sum [sha256.Size]byte, content []byte) (Artifact, error) {
	relDir := StateDirName + "/" + sub
	a := Artifact{RelPath: relDir + "/" + name, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])}

	mu := workspaceLock(s.workspace)
	mu.Lock()
	defer mu.Unlock()

	ws, err := os.OpenRoot(s.workspace)
	if err != nil {
		return Artifact{}, &Error{Reason: "opening the workspace", Err: err}
	}
	defer ws.Close()
	acc := access{gid: s.opts.ReaderGID}
	state, err := openPrivateDir(ws, StateDirName, StateDirName, acc)
	if err != nil {
		return Artifact{}, err
	}
	defer state.Close()
	if err := ensureGitignore(state, acc); err != nil {
		return Artifact{}, err
	}
	dir, err := openPrivateDir(state, sub, relDir, acc)
	if err != nil {
		return Artifact{}, err
	}
	defer dir.Close()

	same, oldSize, err := checkExisting(dir, name, a.RelPath, sum, acc)
	if err != nil || same {
		return a, err
	}
	used, err := folderBytes(dir)
	if err != nil {
		return Artifact{}, &Error{RelPath: relDir, Reason: "measuring the folder", Err: err}
	}
	// A corrupt file of the same name is replaced, so only the growth counts.
	need := a.Size - oldSize
	if used+need > s.opts.Quota {
		return Artifact{}, &Error{Kind: ErrQuotaExceeded, RelPath: relDir, Reason: "quota exceeded",
			Used: used, Need: need, Quota: s.opts.Quota}
	}
	if err := writeAtomic(dir, name, a.RelPath, content, acc); err != nil {
		return Artifact{}, err
	}
	return a, nil
}

// workspaceLocks holds one mutex per workspace path (*sync.Mutex), so
// that the quota check and the write of one Put cannot interleave with
// another Put into the same workspace, however many Stores point at it.
var workspaceLocks sync.Map

func workspaceLock(workspace string) *sync.Mutex {
	mu, _ := workspaceLocks.LoadOrStore(workspace, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

func extension(content []byte) string {
	if utf8.Valid(content) {
		return ".md"
	}
	return ".txt"
}

func unsafePath(rel, reason string) error {
	return &Error{Kind: ErrUnsafePath, RelPath: rel, Reason: reason}
}

// checkEntry refuses what cc-connect must not write through or into.
func checkEntry(fi fs.FileInfo, rel string, wantDir bool) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return unsafePath(rel, "is a symbolic link")
	case wantDir && !fi.IsDir():
		return unsafePath(rel, "is not a folder")
	case !wantDir && !fi.Mode().IsRegular():
		return unsafePath(rel, "is not a regular file")
	case !ownedBySelf(fi):
		return unsafePath(rel, "belongs to another user")
	}
	return nil
}

// access is who besides cc-connect may read what the Store writes: nobody
// (folders 0700, files 0600), or the agent's group when the agent runs as
// another user (folders 0750, files 0640, that group): it must read the
// prompts and attachments it is pointed at, and may write none of them.
type access struct {
	gid int // 0: nobody
}

func (a access) dirMode() fs.FileMode {
	if a.gid > 0 {
		return 0o750
	}
	return dirPerm
}

func (a access) fileMode() fs.FileMode {
	if a.gid > 0 {
		return 0o640
	}
	return filePerm
}

// apply gives the open file or folder f the wanted mode and group,
// through the descriptor so it cannot land on a link's target.
func (a access) apply(f *os.File, fi fs.FileInfo, mode fs.FileMode) error {
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			return err
		}
	}
	if a.gid > 0 {
		if gid, ok := groupOf(fi); !ok || gid != a.gid {
			return f.Chown(-1, a.gid)
		}
	}
	return nil
}

// openPrivateDir opens parent/name as a root of its own, creating it
// (acc.dirMode) when missing, refusing it when checkEntry does, and
// setting its mode and group to acc's when they differ.
func openPrivateDir(parent *os.Root, name, rel string, acc access) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := parent.Mkdir(name, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, &Error{RelPath: rel, Reason: "creating the folder", Err: err}
		}
		fi, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, &Error{RelPath: rel, Reason: "checking the folder", Err: err}
	}
	if err := checkEntry(fi, rel, true); err != nil {
		return nil, err
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, &Error{RelPath: rel, Reason: "opening the folder", Err: err}
	}
	if err := checkOpenedDir(sub, fi, rel, acc); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// checkOpenedDir makes sure the folder opened is the one Lstat checked
// (not a symlink swapped in between) and gives it acc's mode and group.
// The chmod goes through the open descriptor, so it cannot land on a
// link's target.
func checkOpenedDir(dir *os.Root, checked fs.FileInfo, rel string, acc access) error {
	d, err := dir.Open(".")
	if err != nil {
		return &Error{RelPath: rel, Reason: "opening the folder", Err: err}
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return &Error{RelPath: rel, Reason: "checking the folder", Err: err}
	}
	if !os.SameFile(checked, fi) {
		return unsafePath(rel, "changed while it was being checked")
	}
	if err := acc.apply(d, fi, acc.dirMode()); err != nil {
		return &Error{RelPath: rel, Reason: "making the folder private", Err: err}
	}
	return nil
}

// ensureGitignore writes .cc-connect/.gitignore ("*") when it is missing,
// so nothing cc-connect keeps in the workspace is ever committed. An
// existing one is left as it is, unless it is unsafe.
func ensureGitignore(state *os.Root, acc access) error {
	rel := StateDirName + "/" + gitignoreName
	fi, err := state.Lstat(gitignoreName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeAtomic(state, gitignoreName, rel, []byte(gitignoreContent), acc)
	case err != nil:
		return &Error{RelPath: rel, Reason: "checking the file", Err: err}
	}
	return checkEntry(fi, rel, false)
}

// checkExisting looks for an artifact already stored under name. same is
// true when it holds exactly the content with that hash (it is then made
// 0600 if it was looser); otherwise oldSize is the size of a damaged file
// that the write will replace.
func checkExisting(dir *os.Root, name, rel string, want [sha256.Size]byte, acc access) (same bool, oldSize int64, err error) {
	fi, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, &Error{RelPath: rel, Reason: "checking the file", Err: err}
	}
	if err := checkEntry(fi, rel, false); err != nil {
		return false, 0, err
	}
	f, err := dir.Open(name)
	if err != nil {
		return false, 0, &Error{RelPath: rel, Reason: "opening the file", Err: err}
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return false, 0, &Error{RelPath: rel, Reason: "checking the file", Err: err}
	}
	if !os.SameFile(fi, ofi) {
		return false, 0, unsafePath(rel, "changed while it was being checked")
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, 0, &Error{RelPath: rel, Reason: "reading the file", Err: err}
	}
	if [sha256.Size]byte(h.Sum(nil)) != want {
		return false, ofi.Size(), nil
	}
	if err := acc.apply(f, ofi, acc.fileMode()); err != nil {
		return false, 0, &Error{RelPath: rel, Reason: "making the file private", Err: err}
	}
	return true, 0, nil
}

// folderBytes is the size of the regular files directly in dir: what the
// quota bounds. Lstat sizes, so a symlink counts as itself, not its target.
func folderBytes(dir *os.Root) (int64, error) {
	d, err := dir.Open(".")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, name := range names {
		// Through the root, not by host path, like every other access.
		info, err := dir.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return 0, err
		}
		if info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total, nil
}

// writeAtomic writes data to dir/name so that a reader or a crash sees the
// whole file or none: a new temp file (O_EXCL, so a planted link is not
// followed), fsync, rename over name (which replaces a link rather than
// following it), fsync of the folder.
func writeAtomic(dir *os.Root, name, rel string, data []byte, acc access) (err error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return &Error{RelPath: rel, Reason: "creating the file", Err: err}
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = dir.Remove(tmp)
		}
	}()
	// The umask may have narrowed the mode; set it exactly.
	fi, err := f.Stat()
	if err != nil {
		return &Error{RelPath: rel, Reason: "checking the file", Err: err}
	}
	if err := acc.apply(f, fi, acc.fileMode()); err != nil {
		return &Error{RelPath: rel, Reason: "making the file private", Err: err}
	}
	if _, err := f.Write(data); err != nil {
		return &Error{RelPath: rel, Reason: "writing the file", Err: err}
	}
	if err := f.Sync(); err != nil {
		return &Error{RelPath: rel, Reason: "syncing the file", Err: err}
	}
	if err := f.Close(); err != nil {
		return &Error{RelPath: rel, Reason: "writing the file", Err: err}
	}
	if err := dir.Rename(tmp, name); err != nil {
		return &Error{RelPath: rel, Reason: "renaming the file into place", Err: err}
	}
	d, err := dir.Open(".")
	if err != nil {
		return &Error{RelPath: rel, Reason: "syncing the folder", Err: err}
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return &Error{RelPath: rel, Reason: "syncing the folder", Err: err}
	}
	return nil
}
