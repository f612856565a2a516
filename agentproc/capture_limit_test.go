package agentproc_test

import (
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// TestRealCLICaptureRateLimit: with an API key, a 429 rate_limit_error
// (the headers of an exhausted window: retry-after, the
// anthropic-ratelimit-*-reset times, x-should-retry false) becomes a
// synthetic assistant message with "error":"rate_limit" and a result with
// is_error and api_error_status 429; the reset stays in the headers, and
// the CLI exits.
func TestRealCLICaptureRateLimit(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{})
	c.user("[[LIMIT]] hello")
	a := c.next("the synthetic assistant message", func(m map[string]any) bool { return m["type"] == "assistant" })
	if str(a, "message", "model") != "<synthetic>" || str(a, "error") != "rate_limit" {
		t.Errorf("assistant %v, want <synthetic> with error rate_limit", a)
	}
	r := c.result()
	if r["is_error"] != true || dig(r, "api_error_status") != 429.0 || !strings.Contains(str(r, "result"), "429") {
		t.Errorf("result %v, want is_error with api_error_status 429", r)
	}
	for _, l := range c.lines() {
		if l["type"] == "rate_limit_event" {
			t.Logf("rate_limit_event %v", l)
		}
	}
	c.finish()
	t.Logf("exit: %v", c.waitErr)
	c.save("rate_limit", "Fake API marker: `[[LIMIT]]`: HTTP 429 rate_limit_error with retry-after: 3600,\n"+
		"x-should-retry: false, anthropic-ratelimit-unified-status: rejected and the\n"+
		"anthropic-ratelimit-{unified,requests,tokens}-reset headers an hour ahead. The CLI does not retry,\n"+
		"sends a synthetic assistant message with \"error\":\"rate_limit\" and a result with is_error true and\n"+
		"api_error_status 429; neither names the reset. No rate_limit_event (that needs a subscription login).")
}
