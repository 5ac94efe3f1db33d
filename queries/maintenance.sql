-- name: TryMaintenanceLock :one
-- TryMaintenanceLock takes the session advisory lock named @name without waiting; only one session holds it, and it is freed if that session dies, so maintenance runs on one node at a time.
SELECT pg_try_advisory_lock(hashtextextended(@name::text, 0)) AS locked;

-- name: MaintenanceUnlock :one
-- MaintenanceUnlock frees the lock TryMaintenanceLock took in this session.
SELECT pg_advisory_unlock(hashtextextended(@name::text, 0)) AS unlocked;
