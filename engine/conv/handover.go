package conv

import (
	"errors"
	"log/slog"
)

// What a cluster host that stops does with the work of the bindings it
// serves (docs/cluster.md, "A stop hands over"): the running turns get the
// shutdown grace to finish, and what does not finish by then is handed
// over, not dropped. Such an item (a turn the grace cut, a permission wait
// cut with it, a message queued behind them) is neither answered nor
// acknowledged here: its journal entry is parked, its event stays
// unacknowledged in the stream, and the binding's next holder, which the
// host hands its lease to once the engine stopped, runs it and tells the
// thread once that it moved. A host alone keeps its behaviour: the grace,
// then "Stopped" as the reply, and queued messages for its next start.

// errHandedOver ends a turn the shutdown grace cut on a cluster host: the
// binding's next holder runs it again (not acknowledged, nothing posted).
var errHandedOver = errors.New("cut by the shutdown grace: handed to the binding's next holder")

// handover is a conversation's side of a stopping cluster host.
type handover struct {
	jr  *journal
	log *slog.Logger
}

// takes says whether it, cut or left queued by a stop, goes to the
// binding's next holder instead of being answered or kept for this host's
// next start: it came from the cluster's stream.
func (h handover) takes(it workItem) bool {
	return h.jr.cl != nil && it.inboxID != "" && it.streamSeq != 0
}

// leave parks it, unanswered and unacknowledged, for the next holder.
func (h handover) leave(it workItem, why string) {
	h.log.Info("Handing a message to the binding's next holder", "message_id", it.inboxID, "why", why)
	h.jr.park(it, errHandedOver)
}
