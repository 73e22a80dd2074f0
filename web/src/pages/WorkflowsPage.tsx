export default function WorkflowsPage() { return <h1>Workflows</h1>; }
