export default function WorkflowEditorPage() { return <h1>WorkflowEditor</h1>; }
