package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxUploadBytes is the largest file Slack takes (1 GB); SetUploadLimit
// lowers it, as a workspace that restricts large uploads does.
const maxUploadBytes = 1 << 30

// channelIDRE is what completeUploadExternal takes as a channel_id.
var channelIDRE = regexp.MustCompile(`^[CGDZ][A-Z0-9]{1,}$`)

// Upload is one file the bot uploads: its upload URL handed out by
// files.getUploadURLExternal, its bytes posted there, then shared into a
// channel (and thread) by files.completeUploadExternal.
type Upload struct {
	ID       string
	Name     string // filename given to getUploadURLExternal
	Length   int    // length declared there
	Title    string // title given to completeUploadExternal
	Data     []byte // the bytes posted to the upload URL; nil before
	Channel  string // where it was shared; "" while not shared
	ThreadTS string
	Comment  string // initial_comment
	// TS is the share message's ts in Channel.
	TS string
}

// SetUploadLimit makes files over n bytes refused at
// files.getUploadURLExternal, as Slack does for a workspace that restricts
// large uploads (file_upload_size_restricted).
func (s *Server) SetUploadLimit(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadLimit = n
}

// Uploads returns the bot's uploads in the order they were started.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Upload
	for i := int64(1); i <= s.nUpload.Last(); i++ {
		if u, ok := s.uploads[uploadID(i)]; ok {
			c := *u
			c.Data = slices.Clone(u.Data)
			out = append(out, c)
		}
	}
	return out
}

// WaitShared waits for an upload shared into channel (and thread_ts, "" for
// the channel itself) and returns it.
func (s *Server) WaitShared(tb testing.TB, channel, threadTS string) Upload {
	tb.Helper()
	var found Upload
	s.Wait(tb, fmt.Sprintf("a file shared in %s/%s", channel, threadTS), func() bool {
		for _, u := range s.Uploads() {
			if u.Channel == channel && u.ThreadTS == threadTS {
				found = u
				return true
			}
		}
		return false
	})
	return found
}

func uploadID(n int64) string { return fmt.Sprintf("F%07d", n) }

// uploadURLLocked answers files.getUploadURLExternal.
func (s *Server) uploadURLLocked(form map[string]string) answer {
	name := form["filename"]
	length, err := strconv.ParseInt(form["length"], 10, 64)
	switch {
	case name == "" || form["length"] == "":
		return errAnswer("invalid_arguments")
	case err != nil || length <= 0:
		// Slack: "Typically only occurs when the length provided is 0."
		return errAnswer("missing_argument")
	case length > s.uploadLimit:
		return errAnswer("file_upload_size_restricted")
	}
	id := uploadID(s.nUpload.Next())
	s.uploads[id] = &Upload{ID: id, Name: name, Length: int(length)}
	s.sig.Notify()
	return okAnswer(map[string]any{"file_id": id, "upload_url": s.srv.URL + "/upload/v1/" + id})
}

// serveUpload takes a file's bytes at its upload URL, raw or as a
// multipart form (Slack accepts both) and answers as Slack's upload
// service does: 200 "OK - <bytes>". Bytes that are not the length declared
// are refused, so that an adapter that counts wrong is caught.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var data []byte
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		if err = r.ParseMultipartForm(32 << 20); err == nil {
			f, _, ferr := r.FormFile("file")
			if ferr == nil {
				data, err = io.ReadAll(f)
				f.Close()
			} else {
				err = ferr
			}
		}
	} else {
		data, err = io.ReadAll(r.Body)
	}
	if err != nil {
		http.Error(w, "bad upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	u, ok := s.uploads[id]
	switch {
	case !ok:
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	case len(data) != u.Length:
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf("length mismatch: declared %d, got %d", u.Length, len(data)), http.StatusBadRequest)
		return
	}
	u.Data = data
	s.sig.Notify()
	s.mu.Unlock()
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

// completeUploadLocked answers files.completeUploadExternal: it shares the
// uploaded files into channel_id (in thread_ts), posting one message from
// the bot with the initial_comment as its text, and echoes it as Slack
// does. It can be called once per upload.
func (s *Server) completeUploadLocked(form map[string]string) (answer, func()) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(form["files"]), &files); err != nil || len(files) == 0 {
		return errAnswer("invalid_arguments"), nil
	}
	ch := form["channel_id"]
	if ch != "" && !channelIDRE.MatchString(ch) {
		return errAnswer("invalid_arguments"), nil
	}
	if ch != "" && !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found"), nil
	}
	thread := form["thread_ts"]
	if thread != "" && ch == "" {
		return errAnswer("invalid_arguments"), nil
	}
	var ups []*Upload
	for _, f := range files {
		u, ok := s.uploads[f.ID]
		if !ok || u.Data == nil || u.Channel != "" {
			// Unknown, never uploaded, or completed already.
			return errAnswer("file_not_found"), nil
		}
		ups = append(ups, u)
	}
	if len([]rune(form["initial_comment"])) > maxTextChars {
		return errAnswer("msg_too_long"), nil
	}
	out := make([]any, len(ups))
	for i, u := range ups {
		u.Title = files[i].Title
		out[i] = map[string]any{"id": u.ID, "title": orTitle(u)}
	}
	if ch == "" {
		// Not shared: the files stay private to the bot.
		for _, u := range ups {
			u.Channel = "-"
		}
		s.sig.Notify()
		return okAnswer(map[string]any{"files": out}), nil
	}
	m := &Message{Channel: ch, TS: s.nextTSLocked(), ThreadTS: thread, User: BotUserID, BotID: BotID,
		Text: form["initial_comment"]}
	for _, u := range ups {
		u.Channel, u.ThreadTS, u.Comment, u.TS = ch, thread, form["initial_comment"], m.TS
		m.Files = append(m.Files, u.Name)
	}
	s.addMessageLocked(m)
	var after func()
	if s.echo {
		echo := messageObject(m)
		echo["channel"], echo["event_ts"], echo["channel_type"] = ch, m.TS, channelType(ch)
		after = func() { s.deliverEcho(echo) }
	}
	return okAnswer(map[string]any{"files": out}), after
}

func orTitle(u *Upload) string {
	if u.Title != "" {
		return u.Title
	}
	return u.Name
}
