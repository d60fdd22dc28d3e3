/* Node Events; see nodeevent.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "nodeevent.h"

char *nodeevent_body(const char *node, const char *node_uid, bool warning, const char *reason, const char *message,
		     time_t now)
{
	struct tm tm;
	char ts[32], name[300], msg[NODEEVENT_MESSAGE_MAX + 1];
	if (!gmtime_r(&now, &tm) || strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return NULL;
	snprintf(name, sizeof(name), "%s.", node);
	snprintf(msg, sizeof(msg), "%s", message);
	_cleanup_(cJSON_Deletep) cJSON *root = cJSON_CreateObject();
	cJSON *meta, *obj, *src;
	if (!root || !cJSON_AddStringToObject(root, "apiVersion", "v1") || !cJSON_AddStringToObject(root, "kind", "Event") ||
	    !(meta = cJSON_AddObjectToObject(root, "metadata")) || !cJSON_AddStringToObject(meta, "generateName", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", NODEEVENT_NAMESPACE) ||
	    !(obj = cJSON_AddObjectToObject(root, "involvedObject")) || !cJSON_AddStringToObject(obj, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(obj, "kind", "Node") || !cJSON_AddStringToObject(obj, "name", node) ||
	    (node_uid && !cJSON_AddStringToObject(obj, "uid", node_uid)) ||
	    !cJSON_AddStringToObject(root, "type", warning ? "Warning" : "Normal") ||
	    !cJSON_AddStringToObject(root, "reason", reason) || !cJSON_AddStringToObject(root, "message", msg) ||
	    !(src = cJSON_AddObjectToObject(root, "source")) || !cJSON_AddStringToObject(src, "component", "node-agent") ||
	    !cJSON_AddStringToObject(src, "host", node) || !cJSON_AddStringToObject(root, "firstTimestamp", ts) ||
	    !cJSON_AddStringToObject(root, "lastTimestamp", ts) || !cJSON_AddNumberToObject(root, "count", 1) ||
	    !cJSON_AddStringToObject(root, "reportingComponent", "node-agent") ||
	    !cJSON_AddStringToObject(root, "reportingInstance", node))
		return NULL;
	return cJSON_PrintUnformatted(root);
}
