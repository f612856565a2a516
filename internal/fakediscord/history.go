package fakediscord

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Discord's limits for files and history, from its documentation: the
// files of one message may total 10 MiB in a server without boosts (more
// with them: SetUploadLimit), a message carries at most 10 files, and a
// page of channel messages holds 1 to 100 (50 by default).
const (
	maxUploadBytes      = 10 << 20
	maxFilesPerMessage  = 10
	maxMessagesLimit    = 100
	defaultMessageLimit = 50
)

// Error bodies of the file and history endpoints.
const (
	tooLarge      = `{"message":"Request entity too large","code":40005}`
	missingAccess = `{"message":"Missing Access","code":50001}`
	missingPerms  = `{"message":"Missing Permissions","code":50013}`
)

// Attachment is one file of a message: one a test put in a user's message,
// or one the bot uploaded (with its bytes).
type Attachment struct {
	ID          string
	Filename    string
	ContentType string
	Size        int
	Data        []byte // what the bot uploaded; nil for a user's file
}

// SetUploadLimit makes the files of one message over n bytes refused with
// 413, as in a server whose boost level allows n.
func (s *Server) SetUploadLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadLimit = n
}

// HideHistory takes Read Message History away from the bot in channel:
// Discord then answers its messages with an empty list.
func (s *Server) HideHistory(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noHistory[channel] = true
}

// Hide takes View Channel away from the bot in channel: reading its
// messages is 403 Missing Access.
func (s *Server) Hide(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hidden[channel] = true
}

// Put adds a message to its channel as it is (a user's, another bot's,
// with attachments), without dispatching it: one written before the test
// started. The channel must be known.
func (s *Server) Put(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := m.clone()
	s.addMessageLocked(&c)
}

// readBody reads a REST request's body: JSON, or multipart/form-data with
// the JSON in payload_json and the files in files[n], as discordgo sends
// an attachment.
func readBody(r *http.Request) (map[string]any, []Attachment, *Answer) {
	badRequest := &Answer{Status: 400, Body: `{"message":"400: Bad Request","code":0}`}
	var body map[string]any
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				return nil, nil, badRequest
			}
		}
		return body, nil, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, badRequest
	}
	var files []Attachment
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, badRequest
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, badRequest
		}
		switch name := p.FormName(); {
		case name == "payload_json":
			if err := json.Unmarshal(data, &body); err != nil {
				return nil, nil, badRequest
			}
		case strings.HasPrefix(name, "files["):
			files = append(files, Attachment{Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Size: len(data), Data: data})
		}
	}
	return body, files, nil
}

// checkFilesLocked applies Discord's limits to the files of a post.
func (s *Server) checkFilesLocked(files []Attachment) *Answer {
	total := 0
	for _, f := range files {
		total += f.Size
	}
	switch {
	case total > s.uploadLimit:
		return &Answer{Status: http.StatusRequestEntityTooLarge, Body: tooLarge}
	case len(files) > maxFilesPerMessage:
		a := Answer{Status: 400, Body: invalidForm("attachments", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxFilesPerMessage))}
		return &a
	}
	for i, f := range files {
		if f.Filename == "" {
			a := Answer{Status: 400, Body: invalidForm(fmt.Sprintf("attachments.%d.filename", i), "BASE_TYPE_REQUIRED", "This field is required")}
			return &a
		}
	}
	return nil
}

// storeFilesLocked gives the files of a post their ids and CDN URLs.
func (s *Server) storeFilesLocked(files []Attachment) []Attachment {
	out := make([]Attachment, len(files))
	for i, f := range files {
		f.ID = s.nextID()
		if f.ContentType == "" {
			f.ContentType = "application/octet-stream"
		}
		s.files[fmt.Sprintf("/attachments/1/%s/%s", f.ID, f.Filename)] = string(f.Data)
		out[i] = f
	}
	return out
}

// attachmentObjectsLocked are m's files as a message object carries them.
func (s *Server) attachmentObjectsLocked(m *Message) []any {
	out := make([]any, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		u := s.srv.URL + fmt.Sprintf("/attachments/1/%s/%s", a.ID, url.PathEscape(a.Filename))
		out = append(out, map[string]any{"id": a.ID, "filename": a.Filename, "size": a.Size,
			"content_type": a.ContentType, "url": u, "proxy_url": u})
	}
	return out
}

// readableLocked says why the bot may not read channel's messages, if so.
func (s *Server) readableLocked(channel string) *Answer {
	if _, ok := s.channels[channel]; !ok {
		return &Answer{Status: 404, Body: unknownChannel}
	}
	if s.hidden[channel] {
		return &Answer{Status: 403, Body: missingAccess}
	}
	return nil
}

// messagesLocked answers GET /channels/{id}/messages: newest first, at most
// limit, before a message id (after and around are not served). Ids the fake made are in posting
// order; an id it does not know must be a snowflake, compared as a number.
func (s *Server) messagesLocked(channel string, q url.Values) Answer {
	if bad := s.readableLocked(channel); bad != nil {
		return *bad
	}
	limit := defaultMessageLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxMessagesLimit {
			return Answer{Status: 400, Body: invalidForm("limit", "NUMBER_TYPE_MAX", fmt.Sprintf("int value should be less than or equal to %d.", maxMessagesLimit))}
		}
		limit = n
	}
	var inChannel []*Message
	for m := range s.msgs.AllLocked() {
		if m.ChannelID == channel {
			inChannel = append(inChannel, m)
		}
	}
	cut := func(key string) (int, *Answer) {
		id := q.Get(key)
		if id == "" {
			return -1, nil
		}
		if i := slices.IndexFunc(inChannel, func(m *Message) bool { return m.ID == id }); i >= 0 {
			return i, nil
		}
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			a := Answer{Status: 400, Body: invalidForm(key, "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not snowflake.", id))}
			return 0, &a
		}
		// Not a message here: the first message with a larger id.
		for i, m := range inChannel {
			if mn, err := strconv.ParseUint(m.ID, 10, 64); err == nil && mn > n {
				return i, nil
			}
		}
		return len(inChannel), nil
	}
	before, bad := cut("before")
	if bad != nil {
		return *bad
	}
	if s.noHistory[channel] {
		return Answer{Status: 200, Body: "[]"}
	}
	sel := inChannel
	if before >= 0 {
		sel = sel[:before]
	}
	if len(sel) > limit {
		sel = sel[len(sel)-limit:]
	}
	out := make([]any, 0, len(sel))
	for i := len(sel) - 1; i >= 0; i-- {
		out = append(out, s.messageObjectLocked(sel[i]))
	}
	b, _ := json.Marshal(out)
	return Answer{Status: 200, Body: string(b)}
}

// messageLocked answers GET /channels/{id}/messages/{message}.
func (s *Server) messageLocked(channel, id string) Answer {
	if bad := s.readableLocked(channel); bad != nil {
		return *bad
	}
	if s.noHistory[channel] {
		return Answer{Status: 403, Body: missingPerms}
	}
	m, ok := s.msgs.LookupLocked(id)
	if !ok || m.ChannelID != channel {
		return Answer{Status: 404, Body: unknownMessage}
	}
	b, _ := json.Marshal(s.messageObjectLocked(m))
	return Answer{Status: 200, Body: string(b)}
}
