package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
)

// MaxPromptBytes bounds what a template may render: a template that ranges
// over a large payload must not build a prompt nobody meant.
const MaxPromptBytes = 64 << 10

// Template turns a webhook's decoded JSON body into text. It is Go's
// text/template with a small set of functions that only transform values
// (no file, network or environment access exists in text/template, and
// none is added). A field the body lacks is an error, not a "<no value>"
// in the prompt; use index (which gives nothing for a missing key) or with
// for optional fields.
type Template struct {
	t *template.Template
}

// funcs are the functions templates may call besides text/template's own.
var funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"truncate": func(n int, s string) string {
		if r := []rune(s); len(r) > n && n >= 0 {
			return string(r[:n]) + "…"
		}
		return s
	},
	"default": func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	},
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
	"join": func(sep string, list []any) string {
		parts := make([]string, len(list))
		for i, v := range list {
			parts[i] = fmt.Sprint(v)
		}
		return strings.Join(parts, sep)
	},
}

// ParseTemplate parses text as a template named name.
func ParseTemplate(name, text string) (*Template, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	return &Template{t: t}, nil
}

// errTooLong is what the limited writer returns once past MaxPromptBytes.
var errTooLong = errors.New("rendered text is over the limit")

type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, fmt.Errorf("%w of %d bytes", errTooLong, b.limit)
	}
	return b.Buffer.Write(p)
}

// Execute renders the template over data.
func (t *Template) Execute(data any) (string, error) {
	buf := &limitedBuffer{limit: MaxPromptBytes}
	if err := t.t.Execute(buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}
