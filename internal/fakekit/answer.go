package fakekit

import (
	"io"
	"net/http"
)

// Answer is one HTTP answer of a fake: a status, a body (JSON, or none) and
// headers.
type Answer struct {
	Status int // 0 is 200
	Body   string
	Header map[string]string
}

// Write sends a: its headers, a JSON Content-Type when it has a body and
// its headers name none, its status, its body.
func (a Answer) Write(w http.ResponseWriter) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if a.Body != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, a.Body)
}
