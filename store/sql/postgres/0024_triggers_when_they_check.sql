-- 0024: four row triggers run their function only for the rows it checks, not for every row
-- only to return at once. Each call of a PL/pgSQL function costs the writer's statement
-- microseconds (proposals_batch_set_once some 30: its test needs a query plan even when it
-- short-circuits); an agent's submission called all four, and none had anything to check (no
-- batch, no delegation, no standing rule, its audit entries appended unsealed). What each
-- checks, and how, is unchanged: the WHEN is the condition its function returned without.
-- Recreated under the same names (one more for proposals' batch, named to fire where the one
-- it splits from did), so they fire in the same order.

-- proposals_batch_set_once refused an update that moves a proposal to another batch, and
-- checked the batch of a new proposal in one (0017); it returned at once otherwise. One
-- trigger for each event now, each with its condition (a WHEN of an INSERT trigger cannot
-- name OLD).
DROP TRIGGER proposals_batch_set_once ON proposals;
CREATE TRIGGER proposals_batch_set_once
BEFORE UPDATE OF batch_id ON proposals
FOR EACH ROW WHEN (NEW.batch_id IS DISTINCT FROM OLD.batch_id)
EXECUTE FUNCTION proposals_batch_set_once();
CREATE TRIGGER proposals_batch_set_once_on_insert
BEFORE INSERT ON proposals
FOR EACH ROW WHEN (NEW.batch_id IS NOT NULL)
EXECUTE FUNCTION proposals_batch_set_once();

-- proposals_delegation_covers returned at once when the proposal has no delegation (0008).
DROP TRIGGER proposals_delegation_covers ON proposals;
CREATE TRIGGER proposals_delegation_covers
BEFORE INSERT ON proposals
FOR EACH ROW WHEN (NEW.delegation_id IS NOT NULL)
EXECUTE FUNCTION proposals_delegation_covers();

-- proposals_standing_rule_covers returned at once when no standing rule approved it (0006).
DROP TRIGGER proposals_standing_rule_covers ON proposals;
CREATE TRIGGER proposals_standing_rule_covers
BEFORE INSERT ON proposals
FOR EACH ROW WHEN (NEW.standing_rule_id IS NOT NULL)
EXECUTE FUNCTION proposals_standing_rule_covers();

-- audit_log_sealed_at_head returned at once for an entry without its seq (0014): appended
-- unsealed, or an update that removes a seq, which audit_log_refuses_update_and_delete refuses.
DROP TRIGGER audit_log_sealed_at_head ON audit_log;
CREATE TRIGGER audit_log_sealed_at_head
BEFORE INSERT OR UPDATE ON audit_log
FOR EACH ROW WHEN (NEW.seq IS NOT NULL)
EXECUTE FUNCTION audit_log_sealed_at_head();
