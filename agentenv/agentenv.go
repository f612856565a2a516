// Package agentenv says as whom an agent child runs and what of
// cc-connect's environment it must not inherit: the OS user (agent.user),
// the names and patterns dropped from the environment (agent.env_drop) and
// what the config marks secret. It starts nothing: launch applies the rule
// to every child cc-connect starts, and config checks the keys against it,
// without depending on the agent's driver.
package agentenv

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrNotRoot means agent.user names another user while cc-connect is not
// root: only root can start a process as another user. The caller refuses
// to start.
var ErrNotRoot = errors.New("starting the agent as another user needs cc-connect to run as root")

// DefaultEnvDrop is the default of agent.env_drop: names and patterns of
// the variables, inherited from cc-connect's environment, that the agent
// does not get. A pattern ('*' any run of characters, '?' one) never drops
// a name of the agent's own (AgentOwnPrefixes); an exact name does.
var DefaultEnvDrop = []string{
	"*_TOKEN", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_PWD", "*_PASS",
	"*_API_KEY", "*_APIKEY", "*_PRIVATE_KEY", "*_ACCESS_KEY", "*_ACCESS_KEY_ID", "*_CREDENTIALS",
	"DATABASE_URL", "SSH_AUTH_SOCK",
}

// AgentOwnPrefixes start the names Claude Code reads for itself (its login,
// its API endpoint, its settings): a pattern in EnvDrop does not drop them,
// because the CLI holds them anyway and its Bash can print them. Only an
// exact EnvDrop entry does.
var AgentOwnPrefixes = []string{"ANTHROPIC_", "CLAUDE_"}

// SecretVars is what the config marks secret, as the launcher needs it:
// the names of the environment variables secrets are read from (every
// ${VAR} of a platform token, a webhook secret or a cluster credential
// file) and the secrets' values, kept only as SHA-256 digests so that the
// set can be logged or printed without showing one. No child gets a
// variable of those names or with one of those values, whatever Env and
// EnvDrop say. Copies of a Config share the set, so that what a config
// reload adds applies to every later child. It only grows: a variable that
// once held a secret stays secret. The zero value and nil are empty sets;
// methods are safe for concurrent use.
type SecretVars struct {
	mu     sync.Mutex
	names  map[string]bool
	values map[[sha256.Size]byte]bool
}

// NewSecretVars returns a set holding names.
func NewSecretVars(names ...string) *SecretVars {
	s := &SecretVars{}
	s.Add(names...)
	return s
}

// Add puts names in the set.
func (s *SecretVars) Add(names ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = make(map[string]bool, len(names))
	}
	for _, n := range names {
		s.names[n] = true
	}
}

// AddValues puts secret values in the set (their digests); empty ones are
// left out, since every unset variable would match them.
func (s *SecretVars) AddValues(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = make(map[[sha256.Size]byte]bool, len(values))
	}
	for _, v := range values {
		if v != "" {
			s.values[sha256.Sum256([]byte(v))] = true
		}
	}
}

// Has reports whether name is in the set.
func (s *SecretVars) Has(name string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// HasValue reports whether v is the value of a secret in the set.
func (s *SecretVars) HasValue(v string) bool {
	if s == nil || v == "" {
		return false
	}
	sum := sha256.Sum256([]byte(v))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[sum]
}

// Names lists the set's variable names, sorted.
func (s *SecretVars) Names() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.names))
	for n := range s.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// User is the OS user the agent's children run as (agent.user).
type User struct {
	Name   string
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // supplementary groups, the primary one included
	Home   string
}

// LookupUser finds a user by name or by numeric uid in the user database.
// A uid without an entry is refused: its home folder and groups would be
// guesses.
func LookupUser(spec string) (*User, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("no user given")
	}
	var u *user.User
	var err error
	if _, numErr := strconv.ParseUint(spec, 10, 32); numErr == nil {
		u, err = user.LookupId(spec)
	} else {
		u, err = user.Lookup(spec)
	}
	if err != nil {
		var unknownName user.UnknownUserError
		var unknownID user.UnknownUserIdError
		if errors.As(err, &unknownName) || errors.As(err, &unknownID) {
			return nil, fmt.Errorf("no user %q in the user database (/etc/passwd)", spec)
		}
		return nil, fmt.Errorf("looking up user %q: %w", spec, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q has a uid that is not a number (%q)", spec, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q has a gid that is not a number (%q)", spec, u.Gid)
	}
	out := &User{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("listing the groups of user %q: %w", spec, err)
	}
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil && !slices.Contains(out.Groups, uint32(g)) {
			out.Groups = append(out.Groups, uint32(g))
		}
	}
	if !slices.Contains(out.Groups, out.GID) {
		out.Groups = append(out.Groups, out.GID)
	}
	return out, nil
}

// String names the user for messages: "name (uid N)".
func (u *User) String() string {
	if u == nil {
		return "the cc-connect user"
	}
	return fmt.Sprintf("%s (uid %d)", u.Name, u.UID)
}

// CheckSwitch reports whether this process can start children as u: it
// can when u is nil or its own user, or when it is root. Otherwise the
// error wraps ErrNotRoot.
func CheckSwitch(u *User) error {
	euid := os.Geteuid()
	if u == nil || int(u.UID) == euid || euid == 0 {
		return nil
	}
	return fmt.Errorf("%w: cc-connect runs as uid %d, agent.user is %s; run cc-connect as root or remove agent.user", ErrNotRoot, euid, u)
}

// MatchDrop returns the first entry of drop that drops name, or "".
// Matching ignores case: a secret named in lower case is still a secret.
func MatchDrop(name string, drop []string) string {
	upper := strings.ToUpper(name)
	own := false
	for _, p := range AgentOwnPrefixes {
		if strings.HasPrefix(name, p) {
			own = true
		}
	}
	for _, entry := range drop {
		pat := strings.ToUpper(entry)
		if !IsEnvPattern(entry) {
			if pat == upper {
				return entry
			}
			continue
		}
		if own {
			continue
		}
		if ok, err := path.Match(pat, upper); err == nil && ok {
			return entry
		}
	}
	return ""
}

// IsEnvPattern reports whether an agent.env_drop entry is a pattern rather
// than an exact name.
func IsEnvPattern(entry string) bool { return strings.ContainsAny(entry, "*?[") }

// CheckEnvPattern reports whether an agent.env_drop entry is usable: a
// variable name, or a pattern of name characters with '*', '?' and
// [classes].
func CheckEnvPattern(entry string) error {
	if entry == "" {
		return errors.New("is empty")
	}
	for _, r := range entry {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("*?[]^-", r):
		default:
			return fmt.Errorf("%q is neither a variable name nor a pattern of one (letters, digits, _, and * ? [...])", entry)
		}
	}
	if _, err := path.Match(strings.ToUpper(entry), ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern: %v", entry, err)
	}
	return nil
}

// Redacted replaces a secret's value in a text (Redactor).
const Redacted = "[redacted]"

// Redactor replaces the values the config marks secret with Redacted in
// texts that are kept (the audit trail): SecretVars keeps only digests,
// which say whether a whole value is a secret, not where one sits inside
// a text. It holds the values in memory, where cc-connect holds them
// anyway, and never prints them. Like SecretVars it only grows, so that a
// secret a reload replaced is still hidden. The zero value and nil redact
// nothing; methods are safe for concurrent use.
type Redactor struct {
	mu     sync.RWMutex
	values []string // longest first, so that a secret containing another is hidden whole
}

// Add puts secret values in the set; empty ones are left out.
func (r *Redactor) Add(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if v != "" && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
}

// Redact returns s with every secret value replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}
