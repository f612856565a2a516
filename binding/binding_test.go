package binding

import "testing"

func TestRoute(t *testing.T) {
	bs := []Binding{
		{Platform: "slack", Channel: "*", Workspace: "/any"},
		{Platform: "slack", Channel: "C1", Workspace: "/c1"},
		{Platform: "slack", Channel: "*", Workspace: "/second-any"},
		{Platform: "tty", Channel: "local", Workspace: "/tty"},
	}
	tests := []struct {
		platform, channel string
		want              string // workspace; "" = no binding
	}{
		{"slack", "C1", "/c1"},   // the channel named beats "*", wherever it is listed
		{"slack", "C2", "/any"},  // the first "*" of the platform
		{"tty", "local", "/tty"}, // another platform's
		{"tty", "other", ""},     // no "*" for tty
		{"discord", "C1", ""},    // a channel id of another platform does not match
		{"", "", ""},             // nothing
	}
	for _, tt := range tests {
		b, ok := Route(bs, tt.platform, tt.channel)
		if ok != (tt.want != "") || b.Workspace != tt.want {
			t.Errorf("Route(%s, %s) = %q, %v; want %q", tt.platform, tt.channel, b.Workspace, ok, tt.want)
		}
	}
}

func TestRights(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name                          string
		b                             Binding
		user                          string
		allowed, admin, approver      bool
		mentionInChannel, mentionInDM bool
	}{
		{name: "nobody listed", b: Binding{}, user: "U1", mentionInChannel: true},
		{name: "everyone", b: Binding{AllowUsers: []string{"*"}}, user: "U1", allowed: true, approver: true, mentionInChannel: true},
		{name: "approvers named", b: Binding{AllowUsers: []string{"*"}, Approvers: []string{"U2"}}, user: "U1", allowed: true, mentionInChannel: true},
		{name: "an approver must be allowed", b: Binding{AllowUsers: []string{"U3"}, Approvers: []string{"U1"}}, user: "U1", mentionInChannel: true},
		{name: "admin", b: Binding{AllowUsers: []string{"U1"}, Admins: []string{"U1"}}, user: "U1", allowed: true, admin: true, approver: true, mentionInChannel: true},
		{name: "no user id", b: Binding{AllowUsers: []string{"*"}, Admins: []string{"*"}}, user: "", mentionInChannel: true},
		{name: "mention off", b: Binding{RequireMention: &no}, user: "U1"},
		{name: "mention on stays off in DMs", b: Binding{RequireMention: &yes}, user: "U1", mentionInChannel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			if got := b.Allowed(tt.user); got != tt.allowed {
				t.Errorf("Allowed = %v", got)
			}
			if got := b.Admin(tt.user); got != tt.admin {
				t.Errorf("Admin = %v", got)
			}
			if got := b.Approver(tt.user); got != tt.approver {
				t.Errorf("Approver = %v", got)
			}
			if got := b.NeedsMention(false); got != tt.mentionInChannel {
				t.Errorf("NeedsMention(channel) = %v", got)
			}
			if got := b.NeedsMention(true); got != tt.mentionInDM {
				t.Errorf("NeedsMention(DM) = %v", got)
			}
		})
	}
}
