package router

// Topic returns the topic a row with this route.by.field value is routed
// to, or the error Route would give for it.
func (r *Router) Topic(routeValue []byte) (string, error) { return r.topicFor(routeValue) }
