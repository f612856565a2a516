package fakediscord

import (
	"fmt"
	"regexp"
)

// Direct messages: POST /users/@me/channels opens (or finds) the bot's DM
// channel with a user, as Discord does; a post there is refused with
// 50007 when the user allows no direct message from the bot (RefuseDMs),
// which Discord decides at the post, not at the opening.

const cannotDM = `{"message":"Cannot send messages to this user","code":50007}`

var snowflakeRE = regexp.MustCompile(`^[0-9]{1,20}$`)

// DMChannel is the id of the bot's DM channel with user.
func DMChannel(user string) string { return "9000" + user }

// RefuseDMs makes user allow no direct message from the bot.
func (s *Server) RefuseDMs(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noDMs[DMChannel(user)] = true
}

// openDMLocked answers POST /users/@me/channels.
func (s *Server) openDMLocked(body map[string]any) Answer {
	user, _ := body["recipient_id"].(string)
	if !snowflakeRE.MatchString(user) {
		return Answer{Status: 400, Body: invalidForm("recipient_id", "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not snowflake.", user))}
	}
	c := Channel{ID: DMChannel(user), Type: 1}
	s.channels[c.ID] = c
	return Answer{Status: 200, Body: fmt.Sprintf(`{"id":%q,"type":1,"recipients":[{"id":%q,"username":"user%s"}]}`, c.ID, user, user)}
}
