/**
 * @deprecated The ACL of WF00c lives in nodes/shared/acl/loadContext.ts (Context Loader and Knowledge
 * Bot's Answer both use it, and no node imports another node). This re-export only keeps the import path
 * of test/integration (contextLoader, knowledgeBot, membershipOrder); delete it when they import the new path.
 */
export { ContextRequest, loadContext } from '../../shared/acl/loadContext';
