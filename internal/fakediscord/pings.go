package fakediscord

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	everyoneRE = regexp.MustCompile(`@(everyone|here)`)
	userRE     = regexp.MustCompile(`<@!?(\d+)>`)
	roleRE     = regexp.MustCompile(`<@&(\d+)>`)
)

// messagePings is pings of the message a REST call posts or edits, or nil
// for a call that carries none.
func messagePings(method, path string, body map[string]any) []string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case method == "POST" && len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages",
		method == "PATCH" && len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		return pings(body)
	}
	return nil
}

// pings lists whom Discord notifies for a message body, by its
// allowed_mentions rules: without the field, every mention in the content
// pings ("@everyone", "@here", "user 123", "role 456") and a reply pings
// the author of the message replied to ("replied user"); with it, only the
// types its parse list names, the users and roles it lists, and the
// replied-to author when replied_user is true.
func pings(body map[string]any) []string {
	content, _ := body["content"].(string)
	am, present := body["allowed_mentions"].(map[string]any)
	parse := map[string]bool{"everyone": !present, "users": !present, "roles": !present}
	listed := map[string]bool{}
	if present {
		ps, _ := am["parse"].([]any)
		for _, p := range ps {
			parse[fmt.Sprint(p)] = true
		}
		for _, key := range []string{"users", "roles"} {
			ids, _ := am[key].([]any)
			for _, id := range ids {
				listed[key+" "+fmt.Sprint(id)] = true
			}
		}
	}
	var out []string
	if parse["everyone"] {
		out = append(out, everyoneRE.FindAllString(content, -1)...)
	}
	for _, m := range userRE.FindAllStringSubmatch(content, -1) {
		if parse["users"] || listed["users "+m[1]] {
			out = append(out, "user "+m[1])
		}
	}
	for _, m := range roleRE.FindAllStringSubmatch(content, -1) {
		if parse["roles"] || listed["roles "+m[1]] {
			out = append(out, "role "+m[1])
		}
	}
	if body["message_reference"] != nil && (!present || am["replied_user"] == true) {
		out = append(out, "replied user")
	}
	return out
}
