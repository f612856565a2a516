package console

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const hostileDiff = "--- /dev/null\n+++ b/<b>x</b>.go\n@@ -0,0 +1,1 @@\n+<script>window.pwned=1</script>\n"

// withChanges is a rig whose conversation's last turn changed two files.
func withChanges(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.be.changes = map[string]TurnChanges{convKey: {Turn: "0a1b2c3d-uuid", Files: []string{"a.txt", "<b>x</b>.go"}, Added: 4, Removed: 1,
		Diff: hostileDiff, DiffKept: true}}
	return r
}

// post posts form to path as c, without following a redirect.
func (r *rig) post(t *testing.T, c *http.Client, path string, form url.Values, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", r.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c2 := *c
	c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestTurnChangesOnThePage: the conversation page shows the last turn's
// files, lines and diff as text to anyone it allows; the Revert button to
// approvers only; a press reaches the backend's Revert (the engine's
// HandleAction) and the page then says how it ended, and shows the
// refusal a second revert would get instead of the button; a stale page's
// press is taken to the engine too and its refusal shown; a forged or
// cross-site POST is refused before the backend.
func TestTurnChangesOnThePage(t *testing.T) {
	t.Parallel()
	r := withChanges(t)
	approver, user := r.client(t), r.client(t)
	r.signIn(t, approver, "UAPPROVER")
	r.signIn(t, user, "UUSER")
	conv := "/c?k=" + url.QueryEscape(convKey)

	_, page := r.get(t, approver, conv)
	for _, want := range []string{`<p id="changes-sum">2 files (+4 −1)</p>`, `<code>&lt;b&gt;x&lt;/b&gt;.go</code>`,
		`<button type="submit" id="revert"`, `name="turn" value="0a1b2c3d-uuid"`,
		`&#43;&lt;script&gt;window.pwned=1&lt;/script&gt;`, `href="/diff?k=slack%2fC1%2f1.2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the approver's page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>window") || strings.Contains(page, "<b>x") {
		t.Fatalf("the diff or a file name reached the page as HTML:\n%s", page)
	}
	staleCSRF := csrfRE.FindStringSubmatch(page)[1]
	_, upage := r.get(t, user, conv)
	if strings.Contains(upage, `id="revert"`) || !strings.Contains(upage, "only the binding's approvers may revert") ||
		!strings.Contains(upage, `id="changes-sum"`) {
		t.Fatalf("a non-approver's page:\n%s", upage)
	}
	ucsrf := csrfRE.FindStringSubmatch(upage)[1]

	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "k": {convKey}, "turn": {"0a1b2c3d-uuid"}}
	}
	for _, tt := range []struct {
		name   string
		c      *http.Client
		form   url.Values
		origin string
		want   int
	}{
		{"no csrf", approver, form(""), "", http.StatusForbidden},
		{"another session's csrf", approver, form(ucsrf), "", http.StatusForbidden},
		{"another origin", approver, form(staleCSRF), "https://evil.example", http.StatusForbidden},
		{"non-approver forging", user, form(ucsrf), "", http.StatusForbidden},
		{"not signed in", r.ts.Client(), form(staleCSRF), "", http.StatusUnauthorized},
		{"no turn named", approver, url.Values{"csrf": {staleCSRF}, "k": {convKey}}, "", http.StatusBadRequest},
	} {
		if got := r.post(t, tt.c, "/revert", tt.form, tt.origin).StatusCode; got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if len(r.be.reverts) != 0 {
		t.Fatalf("refused POSTs reached the backend: %q", r.be.reverts)
	}

	resp := r.post(t, approver, "/revert", form(staleCSRF), r.ts.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != conv {
		t.Fatalf("the approver's press: %d to %q, want 303 to the conversation", resp.StatusCode, resp.Header.Get("Location"))
	}
	if want := []string{"UAPPROVER " + convKey + " 0a1b2c3d-uuid"}; strings.Join(r.be.reverts, "|") != strings.Join(want, "|") {
		t.Errorf("presses %q, want %q", r.be.reverts, want)
	}
	_, after := r.get(t, approver, conv)
	for _, want := range []string{`<p id="notice" class="notice" role="status">Reverted: a.txt, &lt;b&gt;x&lt;/b&gt;.go.</p>`,
		`<p id="revert-refusal" class="note">Revert: not possible. The last turn was already reverted (by UAPPROVER, `} {
		if !strings.Contains(after, want) {
			t.Errorf("the page after the revert lacks %s:\n%s", want, after)
		}
	}
	if strings.Contains(after, `id="revert"`) {
		t.Error("the page after the revert still offers it")
	}
	if _, again := r.get(t, approver, conv); strings.Contains(again, `id="notice"`) {
		t.Error("the notice shows twice")
	}

	// The press of a page shown before the revert goes to the engine,
	// which refuses it; the page says why, in the chat's words.
	r.post(t, approver, "/revert", form(staleCSRF), "")
	if len(r.be.reverts) != 2 {
		t.Fatalf("the stale page's press did not reach the backend: %q", r.be.reverts)
	}
	if _, refused := r.get(t, approver, conv); !strings.Contains(refused,
		`<p id="notice" class="notice" role="status">Not reverted. The last turn was already reverted (by UAPPROVER, 2026-01-01 12:00 UTC): it cannot be reverted twice.</p>`) {
		t.Errorf("the refusal of a second revert is not on the page:\n%s", refused)
	}
}

// TestRevertOutcomeNotSeen: a press whose outcome does not come in time
// says the thread tells how it ended (the engine posts there).
func TestRevertOutcomeNotSeen(t *testing.T) {
	t.Parallel()
	r := withChanges(t)
	r.be.silent = true
	r.srv.revertWait = time.Millisecond
	c := r.client(t)
	r.signIn(t, c, "UAPPROVER")
	conv := "/c?k=" + url.QueryEscape(convKey)
	_, page := r.get(t, c, conv)
	r.post(t, c, "/revert", url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]}, "k": {convKey}, "turn": {"0a1b2c3d-uuid"}}, "")
	if _, after := r.get(t, c, conv); !strings.Contains(after, "The revert was asked; the thread says how it ended.") {
		t.Errorf("the page after a press with no outcome:\n%s", after)
	}
}

// TestDiffOnThePageAndDownload: the page shows the kept diff up to
// pageDiffBytes and says when it is cut; the download has it whole, as a
// file named as !diff names it, for anyone the conversation allows; a
// turn without a kept diff says so and offers no download.
func TestDiffOnThePageAndDownload(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("+"+strings.Repeat("x", 99)+"\n", pageDiffBytes/100+10)
	tests := []struct {
		name       string
		ch         TurnChanges
		has, lacks []string
		download   int
	}{
		{"a small diff", TurnChanges{Diff: hostileDiff, DiffKept: true}, []string{`<pre id="diff-text">`, `id="diff-download"`},
			[]string{"is cut here"}, http.StatusOK},
		{"a diff over the page's cap", TurnChanges{Diff: big, DiffKept: true}, []string{"The diff is cut here; the download has it whole."},
			nil, http.StatusOK},
		{"no patch reported", TurnChanges{DiffKept: true}, []string{"reported no patch"}, []string{`<pre id="diff-text">`}, http.StatusOK},
		{"not kept", TurnChanges{}, []string{"was not kept"}, []string{`id="diff-download"`, `<pre id="diff-text">`}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			tt.ch.Turn, tt.ch.Files = "0a1b2c3d-9999", []string{"a.txt"}
			r.be.changes = map[string]TurnChanges{convKey: tt.ch}
			c := r.client(t)
			r.signIn(t, c, "UUSER")
			_, page := r.get(t, c, "/c?k="+url.QueryEscape(convKey))
			for _, want := range tt.has {
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			for _, no := range tt.lacks {
				if strings.Contains(page, no) {
					t.Errorf("the page holds %q", no)
				}
			}
			if len(page) > pageDiffBytes+64<<10 {
				t.Errorf("the page is %d bytes, over the diff's cap", len(page))
			}
			resp, err := c.Get(r.ts.URL + "/diff?k=" + url.QueryEscape(convKey))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.download {
				t.Fatalf("the download: %d, want %d", resp.StatusCode, tt.download)
			}
			if tt.download == http.StatusOK && (string(body) != tt.ch.Diff || resp.Header.Get("Content-Disposition") != `attachment; filename="turn-0a1b2c3d.diff"` ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain")) {
				t.Errorf("the download: %q, %v; want the whole diff as turn-0a1b2c3d.diff", body[:min(len(body), 80)], resp.Header)
			}
		})
	}
	// Someone the conversation does not allow gets no diff.
	r := withChanges(t)
	c := r.client(t)
	r.signIn(t, c, "UNOBODY")
	if code, _ := r.get(t, c, "/diff?k="+url.QueryEscape(convKey)); code != http.StatusNotFound {
		t.Errorf("a diff for someone not allowed: %d, want 404", code)
	}
}
