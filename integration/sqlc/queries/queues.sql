-- name: ListQueues :many
-- ListQueues lists the registered queues by name; a plain read, safe at any time.
SELECT name, table_name, mode, paused, registered_at
FROM queuegen_queues
ORDER BY name;

-- name: SetQueuePaused :execrows
-- SetQueuePaused pauses or resumes a queue; a single-row UPDATE, so concurrent calls serialise on the row and the last one wins.
UPDATE queuegen_queues
SET paused = @paused
WHERE name = @name;
