package fakeslack

// Download is the method name under which Hold and HoldWhere hold file
// downloads (url_private), which are not Web API calls: a test makes one
// file's download hang while others go through.
const Download = "files.download"

// Unacked is how many events wait for an ack to be sent again (due, or
// parked until a connection opens): none once everything delivered was
// acknowledged or ran out of retries.
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + len(s.parked)
}
