package fakeapi

import "time"

// noteChunk records when the first chunk of a paced ([[STREAM]]) answer
// was flushed to the client.
func (s *Server) noteChunk(i int) {
	if i != 1 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.firstChunks = append(s.firstChunks, now)
	s.mu.Unlock()
}

// FirstChunks returns when the first chunk of each paced answer was
// flushed to the client, in order: what a streaming benchmark measures the
// chat against.
func (s *Server) FirstChunks() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.firstChunks...)
}
