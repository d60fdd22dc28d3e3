/* Node Events; see nodeevent.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "nodeevent.h"

static int timestamp(time_t t, char buf[static 32])
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return -EINVAL;
	return 0;
}

char *nodeevent_body(const struct nodeevent *e)
{
	char first[32], last[32], gen[300], msg[NODEEVENT_MESSAGE_MAX + 1];
	if (timestamp(e->first, first) < 0 || timestamp(e->last, last) < 0)
		return NULL;
	snprintf(gen, sizeof(gen), "%s.", e->node);
	snprintf(msg, sizeof(msg), "%s", e->message);
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	cJSON *meta, *obj, *src;
	if (!root || !cJSON_AddStringToObject(root, "apiVersion", "v1") || !cJSON_AddStringToObject(root, "kind", "Event") ||
	    !(meta = cJSON_AddObjectToObject(root, "metadata")) ||
	    !cJSON_AddStringToObject(meta, e->name ? "name" : "generateName", e->name ? e->name : gen) ||
	    !cJSON_AddStringToObject(meta, "namespace", NODEEVENT_NAMESPACE) ||
	    !(obj = cJSON_AddObjectToObject(root, "involvedObject")) || !cJSON_AddStringToObject(obj, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(obj, "kind", "Node") || !cJSON_AddStringToObject(obj, "name", e->node) ||
	    (e->node_uid && !cJSON_AddStringToObject(obj, "uid", e->node_uid)) ||
	    !cJSON_AddStringToObject(root, "type", e->warning ? "Warning" : "Normal") ||
	    !cJSON_AddStringToObject(root, "reason", e->reason) || !cJSON_AddStringToObject(root, "message", msg) ||
	    !(src = cJSON_AddObjectToObject(root, "source")) || !cJSON_AddStringToObject(src, "component", "node-agent") ||
	    !cJSON_AddStringToObject(src, "host", e->node) || !cJSON_AddStringToObject(root, "firstTimestamp", first) ||
	    !cJSON_AddStringToObject(root, "lastTimestamp", last) ||
	    !cJSON_AddNumberToObject(root, "count", e->count ? e->count : 1) ||
	    !cJSON_AddStringToObject(root, "reportingComponent", "node-agent") ||
	    !cJSON_AddStringToObject(root, "reportingInstance", e->node))
		return NULL;
	return cJSON_PrintUnformatted(root);
}

char *nodeevent_patch(unsigned count, time_t last, const char *message)
{
	char ts[32], msg[NODEEVENT_MESSAGE_MAX + 1];
	if (timestamp(last, ts) < 0)
		return NULL;
	snprintf(msg, sizeof(msg), "%s", message);
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	if (!root || !cJSON_AddNumberToObject(root, "count", count) || !cJSON_AddStringToObject(root, "lastTimestamp", ts) ||
	    !cJSON_AddStringToObject(root, "message", msg))
		return NULL;
	return cJSON_PrintUnformatted(root);
}

int nodeevent_name(const char *node, uint64_t unique, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.%" PRIx64, node, unique);
	if (n < 0 || (size_t)n >= len || n > NODEEVENT_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}
