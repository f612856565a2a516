package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Asker is who typed !schedules, and where.
type Asker struct {
	Platform, Channel string
	UserID            string
}

// Chat answers the chat command "!schedules [pause|resume NAME]" and
// returns the text to post. Without arguments it lists the schedules that
// post in the asker's channel with their next run. Pausing and resuming
// is for the binding's admins, which the caller checked (the engine's
// command registry holds who may run what), and only for those schedules.
func (s *Scheduler) Chat(ctx context.Context, args string, who Asker) string {
	fields := strings.Fields(args)
	all, err := s.List(ctx)
	if err != nil {
		s.log.Error("Listing schedules for chat failed", "user_id", who.UserID, "error", err)
		return "Could not read the schedules' pauses from the cluster (the log has the details); try again."
	}
	var here []Status
	for _, st := range all {
		if st.Platform == who.Platform && st.Channel == who.Channel {
			here = append(here, st)
		}
	}
	if len(fields) == 0 {
		if len(here) == 0 {
			return "No schedules post in this channel."
		}
		return ListText(here, s.clock.Now())
	}
	verb := strings.ToLower(fields[0])
	if (verb != "pause" && verb != "resume") || len(fields) != 2 {
		return "Usage: !schedules (list this channel's schedules), !schedules pause NAME, !schedules resume NAME (admins)."
	}
	name := fields[1]
	found := false
	for _, st := range here {
		found = found || st.Name == name
	}
	if !found {
		names := make([]string, len(here))
		for i, st := range here {
			names[i] = st.Name
		}
		if len(names) == 0 {
			return fmt.Sprintf("No schedule named %q posts in this channel (none does).", name)
		}
		return fmt.Sprintf("No schedule named %q posts in this channel. Schedules here: %s.", name, strings.Join(names, ", "))
	}
	var changed bool
	if verb == "pause" {
		changed, err = s.Pause(ctx, name, who.UserID)
	} else {
		changed, err = s.Resume(ctx, name, who.UserID)
	}
	switch {
	case errors.Is(err, ErrUnknownSchedule):
		return fmt.Sprintf("No schedule named %q.", name)
	case err != nil:
		s.log.Error("Changing a schedule from chat failed", "schedule", name, "user_id", who.UserID, "error", err)
		return fmt.Sprintf("Could not %s %s: the schedule ledger or the cluster's pauses could not be written (the log has the details).", verb, name)
	case verb == "pause" && changed:
		return fmt.Sprintf("Paused %s: it does not run until an admin resumes it (!schedules resume %s).", name, name)
	case verb == "pause":
		return fmt.Sprintf("%s was already paused.", name)
	case changed:
		next := ""
		after, _ := s.List(ctx)
		for _, st := range after {
			if st.Name == name && !st.Next.IsZero() {
				next = "; next run " + st.Next.Format("2006-01-02 15:04 MST")
			}
		}
		return fmt.Sprintf("Resumed %s%s. Runs that passed while it was paused are not caught up.", name, next)
	}
	return fmt.Sprintf("%s is not paused.", name)
}
