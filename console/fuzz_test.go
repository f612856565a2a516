package console

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// FuzzPagesEscape renders the conversation page with chat text and tool
// inputs from the fuzzer and checks, with an HTML parser, that they made
// no element, no attribute and no script of their own: what a page
// shows of them is text.
func FuzzPagesEscape(f *testing.F) {
	for _, s := range []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `</pre><b>x`,
		`javascript:alert(1)`, "`${x}`", `<!--`, `]]>`, `&amp;`, "\u2028"} {
		f.Add(s, s)
	}
	var base bytes.Buffer
	if err := renderPage(&base, "conversation", hostileData("plain", "plain")); err != nil {
		f.Fatal(err)
	}
	want := shape(f, base.String())
	f.Fuzz(func(t *testing.T, text, input string) {
		var b bytes.Buffer
		if err := renderPage(&b, "conversation", hostileData(text, input)); err != nil {
			return // not UTF-8 the template refuses: nothing is shown
		}
		if got := shape(t, b.String()); got != want {
			t.Fatalf("the page's elements changed with text %q, input %q:\n got %s\nwant %s", text, input, got, want)
		}
	})
}

// shape is a page's elements and attribute names, in order: what the
// page is, whatever text it shows.
func shape(tb testing.TB, page string) string {
	tb.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var out strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out.String()
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			out.Write(name)
			for more {
				var k []byte
				k, _, more = z.TagAttr()
				out.WriteString(" " + string(k))
			}
			out.WriteString(";")
		case html.EndTagToken:
			name, _ := z.TagName()
			out.WriteString("/" + string(name) + ";")
		}
	}
}
